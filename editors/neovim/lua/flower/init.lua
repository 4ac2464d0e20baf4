-- flower in Neovim: one flower-lsp for the workspace, its commands, its questions through
-- vim.ui.select / vim.ui.input, the banner and the run's log as notifications, the context
-- meter for the statusline, the judge's verdicts as Neovim's own diagnostics on 目标.md, and the
-- history of the folder's work in a buffer (:FlowerHistory) that follows the run.
--
--   require('flower').setup({ cmd = { 'flower-lsp' }, init_options = { timeout_s = 1800 } })
--
-- A server request must be answered at once in Neovim, so a question's handler replies {} and
-- the person's answer goes back later with the command flower.answer, which holds nothing open.
local client = require('flower.client')
local format = require('flower.format')
local history = require('flower.history')
local P = require('flower.protocol')

local M = {}

local LEVELS = vim.log.levels
local OWN_WORDS = 'Answer in my own words…'
local SKIP = 'Skip (the agent decides)'
local WHAT_TO_DO = '要做什么?一句话就够。'

M.defaults = {
  cmd = { 'flower-lsp' },
  -- the workspace folder; default: the current directory when setup() runs
  root_dir = nil,
  -- initializationOptions: run_dir, timeout_s, window, folders (docs/protocol.md)
  init_options = {},
  -- the flower/event kinds shown as notifications; every event also goes to :FlowerLog
  notify = { run = true, step = true, verdict = true, ask = true, mail = true, retry = true, handoff = true, error = true },
  -- start the server in setup(); otherwise :FlowerStart does
  autostart = true,
}

M.config = vim.deepcopy(M.defaults)
M.state = { id = nil, meter = nil, log = {}, asking = false, queue = {}, history = nil, targets = {} }

local HISTORY_BUFFER = 'flower://history'

local function notify(text, level)
  vim.notify('Flower: ' .. text, level or LEVELS.INFO)
end

local function current()
  local c = client.get(M.state.id)
  if not c then
    notify('the language server is not running (:FlowerStart starts it)', LEVELS.ERROR)
  end
  return c
end

-- -- commands ---------------------------------------------------------------------------------

--- Show a command's result (this plugin declares `results`: the server leaves that to us).
local function report(err, result, then_)
  if err then
    notify(err.message or vim.inspect(err), LEVELS.ERROR)
    return
  end
  if type(result) ~= 'table' then
    return
  end
  notify(result.message or '', result.ok and LEVELS.INFO or LEVELS.WARN)
  if then_ then
    then_(result)
  end
end

--- Run a flower command; `then_(result)` gets the CommandResult once it is shown.
function M.command(name, args, then_)
  local c = current()
  if c then
    client.execute(c, name, args, function(err, result)
      report(err, result, then_)
    end)
  end
end

local function ask_request(new)
  vim.ui.input({ prompt = WHAT_TO_DO .. ' ' }, function(text)
    if text and vim.trim(text) ~= '' then
      M.command(P.START, { ask = vim.trim(text), new = new })
    end
  end)
end

--- :FlowerContinue. Nothing to continue: the server offers a new run (`offer`), asked here.
function M.continue()
  M.command(P.CONTINUE, nil, function(result)
    if result.offer == 'start' then
      ask_request(false)
    end
  end)
end

--- :FlowerNew [request]: archive the folder's last run and start over.
function M.new(text)
  if text and vim.trim(text) ~= '' then
    M.command(P.START, { ask = vim.trim(text), new = true })
  else
    ask_request(true)
  end
end

--- :FlowerSay [text]: interrupt the step in flight with these words.
function M.say(text)
  local function send(words)
    if words and vim.trim(words) ~= '' then
      M.command(P.SAY, { text = vim.trim(words) })
    end
  end
  if text and vim.trim(text) ~= '' then
    send(text)
  else
    vim.ui.input({ prompt = 'Say to the running work: ' }, send)
  end
end

function M.stop()
  M.command(P.STOP)
end

--- :FlowerAnswer [text]: answer the oldest waiting question in one's own words.
function M.answer(text, id)
  M.command(P.ANSWER, { text = text or '', id = id })
end

local REWIND, CANCEL = 'Rewind', 'Cancel'

--- The confirmation of a rewind: the preview's line, then every file it will change.
local function rewind_prompt(preview)
  local lines = { preview.message }
  for _, path in ipairs(preview.changed or {}) do
    table.insert(lines, '  ~ ' .. path)
  end
  for _, path in ipairs(preview.removed or {}) do
    table.insert(lines, '  - ' .. path)
  end
  for _, path in ipairs(preview.kept or {}) do
    table.insert(lines, '  = ' .. path .. ' (yours, kept)')
  end
  return table.concat(lines, '\n')
end

--- :FlowerRewind N [remark]: back to the end of judged round N, files and conversation, once the
--- person confirmed the files the server's preview lists.
function M.rewind(text)
  local n, remark = vim.trim(text or ''):match('^(%d+)%s*(.*)$')
  if not n then
    notify('usage: :FlowerRewind N [remark] (N: a judged round)', LEVELS.WARN)
    return
  end
  local c = current()
  if not c then
    return
  end
  local round = tonumber(n)
  client.execute(c, P.REWIND, { round = round, preview = true }, function(err, preview)
    if err or type(preview) ~= 'table' or not preview.ok then
      report(err, preview)
      return
    end
    vim.ui.select({ REWIND, CANCEL }, { prompt = rewind_prompt(preview) }, function(choice)
      if choice == REWIND then
        M.command(P.REWIND, { round = round, remark = remark })
      end
    end)
  end)
end

--- :FlowerOpen brief|goal|handoff. A client that cannot show documents gets the path back.
function M.open(which)
  M.command(P.OPEN_DOCUMENT, { which = which }, function(result)
    if not result.ok and result.uri then
      vim.cmd('edit ' .. vim.fn.fnameescape(vim.uri_to_fname(result.uri)))
    end
  end)
end

--- :FlowerState: what the server says about the folder, in a scratch buffer.
function M.show_state(on_state)
  local c = current()
  if not c then
    return
  end
  -- no params: flower/state allows none
  client.request(c, P.STATE, nil, function(err, result)
    if err then
      notify(err.message or vim.inspect(err), LEVELS.ERROR)
      return
    end
    if on_state then
      on_state(result)
      return
    end
    M.scratch('flower://state', format.state(result))
  end)
end

--- :FlowerLog: every event line of this session.
function M.show_log()
  M.scratch('flower://log', M.state.log)
end

function M.scratch(name, lines)
  local bufnr = vim.fn.bufnr(name)
  if bufnr == -1 then
    bufnr = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(bufnr, name)
  end
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.api.nvim_set_current_buf(bufnr)
end

-- -- the history ------------------------------------------------------------------------------------

--- The workspace folder as the server knows it (the URI this plugin gave it).
local function folder_uri()
  return vim.uri_from_fname(M.config.root_dir)
end

local function history_buffer()
  local bufnr = vim.fn.bufnr(HISTORY_BUFFER)
  if bufnr ~= -1 and vim.api.nvim_buf_is_valid(bufnr) then
    return bufnr
  end
  return nil
end

--- Draw the history held into its buffer, if the buffer is there; every window on it keeps its line.
function M.render_history()
  local bufnr = history_buffer()
  if not bufnr then
    return
  end
  local lines, targets = history.render(M.state.history)
  local cursors = {}
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    cursors[win] = vim.api.nvim_win_get_cursor(win)
  end
  vim.api.nvim_buf_set_option(bufnr, 'modifiable', true)
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.api.nvim_buf_set_option(bufnr, 'modifiable', false)
  M.state.targets = targets
  for win, cursor in pairs(cursors) do
    vim.api.nvim_win_set_cursor(win, { math.min(cursor[1], #lines), cursor[2] })
  end
end

--- <CR> in the history: a failed check opens 目标.md at its line, a handoff its document.
function M.open_history_line()
  local target = M.state.targets[vim.api.nvim_win_get_cursor(0)[1]]
  if not target then
    return
  end
  if vim.fn.filereadable(target.path) == 0 then
    notify(target.path .. ' is not there (any more)', LEVELS.WARN)
    return
  end
  vim.cmd('edit ' .. vim.fn.fnameescape(target.path))
  if target.line then
    vim.api.nvim_win_set_cursor(0, { math.min(target.line + 1, vim.api.nvim_buf_line_count(0)), 0 })
  end
end

--- Ask the server for the whole history and draw it; `then_(history)` once it is drawn.
function M.read_history(then_)
  local c = current()
  if not c then
    return
  end
  client.request(c, P.HISTORY, { folder = folder_uri() }, function(err, result)
    if err then
      notify(err.message or vim.inspect(err), LEVELS.ERROR)
      return
    end
    M.state.history = history.newer(M.state.history, result)
    M.render_history()
    if then_ then
      then_(M.state.history)
    end
  end)
end

--- :FlowerHistory: the history in a buffer of its own, read now and kept current by the server's
--- flower/historyUpdate (this plugin declares `history`).
function M.show_history(then_)
  local bufnr = history_buffer()
  if not bufnr then
    bufnr = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(bufnr, HISTORY_BUFFER)
    vim.api.nvim_buf_set_option(bufnr, 'filetype', 'flowerhistory')
    vim.api.nvim_buf_set_option(bufnr, 'bufhidden', 'hide')
    vim.keymap.set('n', '<CR>', M.open_history_line, { buffer = bufnr, desc = 'flower: open what this line is about' })
    vim.keymap.set('n', 'R', function()
      M.read_history()
    end, { buffer = bufnr, desc = 'flower: read the history again' })
  end
  vim.api.nvim_set_current_buf(bufnr)
  M.render_history()
  M.read_history(then_)
end

-- -- what the server sends ----------------------------------------------------------------------

local function answer_with(params, text)
  M.command(P.ANSWER, { id = params.id, text = text, folder = params.folder })
end

local function next_question()
  local params = table.remove(M.state.queue, 1)
  if not params then
    M.state.asking = false
    return
  end
  M.state.asking = true
  local items = vim.deepcopy(params.options or {})
  if params.free_text then
    table.insert(items, OWN_WORDS)
  end
  table.insert(items, SKIP)
  vim.ui.select(items, { prompt = 'Flower asks: ' .. params.question }, function(choice)
    if choice == nil then
      notify(string.format('question %s still waits: :FlowerAnswer <your words>', params.id), LEVELS.WARN)
    elseif choice == OWN_WORDS then
      vim.ui.input({ prompt = params.question .. ' ' }, function(text)
        if text ~= nil then
          answer_with(params, text)
        end
        next_question()
      end)
      return
    elseif choice == SKIP then
      answer_with(params, '')
    else
      answer_with(params, choice)
    end
    next_question()
  end)
end

M.handlers = {}

-- flower/ask: reply at once ({} = no answer yet), then ask the person; one question at a time
M.handlers[P.ASK] = function(_, params)
  table.insert(M.state.queue, params)
  if not M.state.asking then
    M.state.asking = true
    vim.schedule(next_question)
  end
  return vim.empty_dict()
end

M.handlers[P.BANNER] = function(_, params)
  notify(params.text)
end

M.handlers[P.EVENT] = function(_, ev)
  table.insert(M.state.log, format.event_line(ev))
  if M.config.notify[ev.kind] then
    notify(ev.text, format.event_level(ev))
  end
end

M.handlers[P.HISTORY_UPDATE] = function(_, update)
  if update.folder ~= folder_uri() then
    return
  end
  local held, applied = history.apply(M.state.history, update)
  if applied == 'missed' then
    -- an update was lost (or none is held yet): only a buffer on show needs the whole story now
    if history_buffer() then
      M.read_history()
    end
    return
  end
  M.state.history = held
  if applied ~= 'stale' then
    M.render_history()
  end
end

M.handlers[P.CONTEXT] = function(_, ctx)
  M.state.meter = ctx
  vim.cmd('redrawstatus')
end

--- For 'statusline': `%{v:lua.require'flower'.statusline()}`.
function M.statusline()
  local text = format.meter(M.state.meter)
  if #M.state.queue > 0 or M.state.asking then
    text = vim.trim(text .. ' ?')
  end
  return text
end

-- -- the session --------------------------------------------------------------------------------

local function in_root(path)
  local root = M.config.root_dir
  return path ~= '' and root ~= nil and (path == root or vim.startswith(path, root .. '/'))
end

--- Attach the workspace's Markdown buffers: the verdicts' code actions live on 目标.md.
local function attach(bufnr)
  if M.state.id and in_root(vim.api.nvim_buf_get_name(bufnr)) then
    client.attach(bufnr, M.state.id)
  end
end

function M.start()
  if client.get(M.state.id) then
    return M.state.id
  end
  local id = client.start({
    cmd = M.config.cmd,
    root_dir = M.config.root_dir,
    init_options = M.config.init_options,
    on_exit = function()
      M.state.id = nil
    end,
  }, M.handlers)
  if not id then
    notify('could not start ' .. table.concat(M.config.cmd, ' '), LEVELS.ERROR)
    return nil
  end
  M.state.id = id
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.api.nvim_buf_get_name(bufnr):match('%.md$') then
      attach(bufnr)
    end
  end
  return id
end

local function with_args(fn)
  return function(cmd)
    fn(cmd.args ~= '' and cmd.args or nil)
  end
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  local root = M.config.root_dir or vim.fn.getcwd()
  M.config.root_dir = vim.fn.fnamemodify(root, ':p'):gsub('/$', '')
  local command = vim.api.nvim_create_user_command
  command('FlowerStart', function()
    M.start()
  end, {})
  command('FlowerContinue', M.continue, {})
  command('FlowerNew', with_args(M.new), { nargs = '?' })
  command('FlowerSay', with_args(M.say), { nargs = '?' })
  command('FlowerStop', M.stop, {})
  command('FlowerState', function()
    M.show_state()
  end, {})
  command('FlowerAnswer', with_args(M.answer), { nargs = '?' })
  command('FlowerRewind', with_args(M.rewind), { nargs = '+' })
  command('FlowerLog', M.show_log, {})
  command('FlowerHistory', function()
    M.show_history()
  end, {})
  command('FlowerOpen', function(cmd)
    M.open(cmd.args)
  end, {
    nargs = 1,
    complete = function()
      return P.DocumentName
    end,
  })
  local group = vim.api.nvim_create_augroup('flower', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
    group = group,
    pattern = '*.md',
    callback = function(args)
      attach(args.buf)
    end,
  })
  if M.config.autostart then
    M.start()
  end
end

return M
