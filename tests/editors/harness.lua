-- What both Neovim runs share: the test's parameters (environment), patient waiting, what was
-- seen (written as JSON for pytest to assert on), and a clean exit whatever happens.
local H = {}

H.ws = assert(os.getenv('FLOWER_TEST_WS'), 'FLOWER_TEST_WS')
H.cmd = vim.json.decode((assert(os.getenv('FLOWER_TEST_CMD'), 'FLOWER_TEST_CMD')))
H.request = assert(os.getenv('FLOWER_TEST_REQUEST'), 'FLOWER_TEST_REQUEST')
H.goal = H.ws .. '/.flower/notes/目标.md'
H.seen = { diagnostics = {}, steps = {} }

local out = assert(os.getenv('FLOWER_TEST_OUT'), 'FLOWER_TEST_OUT')
-- patient: the machine may be shared and busy (a run can take minutes, a start tens of seconds)
local RUN_MS = 480000
H.SOON = 120000

function H.step(name)
  table.insert(H.seen.steps, name)
end

--- Wait until `predicate()` holds, processing the editor's events meanwhile.
function H.wait(what, predicate, ms)
  if not vim.wait(ms or RUN_MS, predicate, 20) then
    error('timed out waiting for ' .. what)
  end
end

--- Whether the run's log (the plugin's `[kind] text` lines) says the run has ended.
function H.ended(log)
  for _, line in ipairs(log) do
    if line:match('^%[run%] finished') or line:match('^%[run%] failed') or line:match('^%[run%] stopped') then
      return true
    end
  end
  return false
end

--- Every diagnostic Neovim shows on 目标.md, each time they change.
function H.watch_goal()
  vim.api.nvim_create_autocmd('DiagnosticChanged', {
    callback = function(args)
      if vim.api.nvim_buf_get_name(args.buf) ~= H.goal then
        return
      end
      local now = {}
      for _, d in ipairs(vim.diagnostic.get(args.buf)) do
        table.insert(now, { lnum = d.lnum, severity = d.severity, source = d.source, message = d.message })
      end
      table.insert(H.seen.diagnostics, now)
    end,
  })
end

local function finish(code)
  local file = assert(io.open(out, 'w'))
  file:write(vim.json.encode(H.seen))
  file:close()
  vim.cmd((code == 0 and 'qall!') or ('cquit ' .. code))
end

--- Run the test body; any error is recorded and Neovim exits non-zero.
function H.run(body)
  local ok, err = xpcall(body, debug.traceback)
  if not ok then
    H.seen.error = tostring(err)
  end
  finish(ok and 0 or 1)
end

return H
