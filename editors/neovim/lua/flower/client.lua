-- The language client: started once for the workspace with Neovim's own LSP client, on
-- Neovim 0.7 (vim.lsp.start_client, buf_attach_client) as on current releases (vim.lsp.start
-- without attaching, methods called with `:`).
local P = require('flower.protocol')

local M = {}

local modern = vim.fn.has('nvim-0.11') == 1

--- Every flower extension this plugin handles (capabilities.experimental.flower; docs/protocol.md).
M.EXTENSIONS = { ask = true, banner = true, context = true, event = true, results = true, offer = true, history = true }

--- An empty JSON object: Lua's empty table would go out as [].
function M.object(t)
  if t == nil or next(t) == nil then
    return vim.empty_dict()
  end
  return t
end

--- The editor's language as an LSP locale ("en-US", "zh-CN"): the first of LC_ALL, LC_MESSAGES
--- and LANG that is set (the POSIX order), else v:lang; nil for C/POSIX, so the server falls back
--- to its own choice.
function M.locale()
  local value = nil
  for _, name in ipairs({ 'LC_ALL', 'LC_MESSAGES', 'LANG' }) do
    local v = vim.env[name]
    if v ~= nil and v ~= '' then
      value = v
      break
    end
  end
  value = value or vim.v.lang
  local tag = value and value:match('^([%a_%-]+)') or nil
  if tag == nil or tag == 'C' or tag == 'POSIX' then
    return nil
  end
  return (tag:gsub('_', '-'))
end

--- Start the client; returns its id, or nil and why not.
function M.start(opts, handlers)
  local root = opts.root_dir
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  capabilities.experimental = { [P.EXPERIMENTAL_KEY] = M.EXTENSIONS }
  local config = {
    name = 'flower',
    cmd = opts.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ':t') } },
    capabilities = capabilities,
    init_options = M.object(opts.init_options),
    -- the server speaks the editor's language (InitializeParams.locale, as VS Code sends it)
    before_init = function(params)
      params.locale = M.locale()
    end,
    handlers = handlers,
    on_exit = opts.on_exit,
  }
  if modern then
    return vim.lsp.start(config, { attach = false })
  end
  return vim.lsp.start_client(config)
end

function M.get(id)
  return id and vim.lsp.get_client_by_id(id) or nil
end

--- A request to the server; `on_result(err, result)` is called on the main loop.
function M.request(client, method, params, on_result)
  local function handler(err, result)
    on_result(err, result)
  end
  if modern then
    return client:request(method, params, handler)
  end
  return client.request(method, params, handler)
end

--- A flower command with its one argument object (docs/protocol.md).
function M.execute(client, command, args, on_result)
  local params = { command = command, arguments = { M.object(args) } }
  return M.request(client, 'workspace/executeCommand', params, on_result)
end

--- Attach a buffer (a document the server publishes on: 目标.md, 需求.md).
function M.attach(bufnr, id)
  return vim.lsp.buf_attach_client(bufnr, id)
end

function M.stop(client)
  if modern then
    client:stop()
  else
    client.stop()
  end
end

return M
