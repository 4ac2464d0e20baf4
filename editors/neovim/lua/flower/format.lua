-- Pure text helpers (no editor state): token counts, the meter, the run's state, log lines.
local M = {}

--- 80200 -> "80.2K", 1000000 -> "1M", 512 -> "512" (as the VS Code meter writes them).
function M.tokens(n)
  if type(n) ~= 'number' or n < 0 then
    return '?'
  end
  if n < 1000 then
    return tostring(math.floor(n + 0.5))
  end
  local function scaled(value, unit)
    local text = string.format('%.1f', value)
    return (text:gsub('%.0$', '')) .. unit
  end
  if tonumber(string.format('%.1f', n / 1000)) < 1000 then
    return scaled(n / 1000, 'K')
  end
  return scaled(n / 1000000, 'M')
end

--- The meter for a statusline: "Flower 80.2K / 1M", marked near a handoff and while it happens.
function M.meter(ctx)
  if type(ctx) ~= 'table' then
    return ''
  end
  local text = string.format('Flower %s / %s', M.tokens(ctx.used), M.tokens(ctx.window))
  if ctx.handing_off then
    return text .. ' (handing off)'
  end
  if ctx.near then
    return text .. ' (near the handoff)'
  end
  return text
end

--- 0.28 -> "$0.28"; a fraction of a cent still shows ("$0.004"); nothing -> "$0".
function M.cost(usd)
  if type(usd) ~= 'number' or usd <= 0 then
    return '$0'
  end
  if usd < 0.01 then
    return string.format('$%.3f', usd)
  end
  return string.format('$%.2f', usd)
end

--- 0.8 -> "0.8s", 12 -> "12s", 252 -> "4m 12s", 3780 -> "1h 3m" (as the VS Code view writes them).
function M.duration(seconds)
  if type(seconds) ~= 'number' or seconds <= 0 then
    return '0s'
  end
  if seconds < 10 then
    return (string.format('%.1f', seconds):gsub('%.0$', '')) .. 's'
  end
  local s = math.floor(seconds + 0.5)
  if s < 60 then
    return s .. 's'
  end
  local m = math.floor(s / 60)
  if m < 60 then
    return string.format('%dm %ds', m, s % 60)
  end
  return string.format('%dh %dm', math.floor(m / 60), m % 60)
end

--- Local time of an epoch-seconds stamp: "2026-12-01 11:10:27"; "" for none.
function M.time(epoch)
  if type(epoch) ~= 'number' or epoch <= 0 then
    return ''
  end
  return os.date('%Y-%m-%d %H:%M:%S', math.floor(epoch))
end

--- The first non-blank line of a text, cut to `limit` characters (not bytes) with an ellipsis.
function M.first_line(text, limit)
  limit = limit or 120
  local line = ''
  for l in tostring(text or ''):gmatch('[^\n]+') do
    if vim.trim(l) ~= '' then
      line = vim.trim(l)
      break
    end
  end
  if vim.fn.strchars(line) > limit then
    return vim.fn.strcharpart(line, 0, limit - 1) .. '…'
  end
  return line
end

local LEVELS = vim.log.levels

--- How loud a flower/event is, as a vim.log.levels value.
function M.event_level(ev)
  local payload = type(ev.payload) == 'table' and ev.payload or {}
  if ev.kind == 'error' or (ev.kind == 'run' and payload.phase == 'failed') then
    return LEVELS.ERROR
  end
  if ev.kind == 'retry' or ev.kind == 'handoff' or (ev.kind == 'verdict' and payload.state ~= 'achieved') then
    return LEVELS.WARN
  end
  return LEVELS.INFO
end

--- One line of the run's log.
function M.event_line(ev)
  return string.format('[%s] %s', ev.kind or '?', ev.text or '')
end

local function yes(b)
  return b and 'yes' or 'no'
end

--- The flower/state answer as lines for a scratch buffer.
function M.state(s)
  local lines = {
    'Flower state: ' .. (s.workspace or '?'),
    '',
    'Running: ' .. yes(s.running),
    'Can be continued: ' .. yes(s.waking) .. string.format(' (woken %d times)', s.woke or 0),
    'Brief: ' .. (s.brief or ''),
    'Goal: ' .. (s.goal or '') .. string.format(' (%d checks)', s.checks or 0),
    'Run directory: ' .. (s.run_dir or ''),
  }
  if s.step and s.step ~= '' then
    table.insert(lines, string.format('Step: %s %d/%d, round %d', s.step, s.index or 0, s.total or 0, s.round or 1))
  end
  if (s.window or 0) > 0 then
    table.insert(lines, string.format('Context: %s / %s', M.tokens(s.used), M.tokens(s.window)))
  end
  table.insert(lines, string.format('Cost: $%.4f', s.cost_usd or 0))
  if type(s.verdict) == 'table' then
    local verdict = s.verdict.state ~= '' and s.verdict.state or '(no conclusion)'
    table.insert(lines, string.format('Verdict, round %d: %s', s.verdict.round or 0, verdict))
  end
  for _, ask in ipairs(s.pending or {}) do
    table.insert(lines, string.format('Waiting question %s: %s', ask.id, ask.question))
  end
  return lines
end

return M
