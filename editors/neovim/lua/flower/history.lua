-- The history of a folder's work (flower/history, docs/history.md) as the lines of a buffer:
-- wake -> step -> round -> the judge's verdict with its failed checks, the questions with their
-- answers, handoffs, retries and errors, cost and time everywhere, the live step marked; the
-- latest wake first, as the VS Code view shows it. Pure (no editor state): `render` gives the
-- lines and, per line, what <CR> opens there; `apply` is how flower/historyUpdate changes the
-- history held.
local format = require('flower.format')

local M = {}

--- A verdict's state as people say it.
function M.verdict_word(state)
  if state == 'achieved' then
    return 'achieved'
  elseif state == 'not_yet' then
    return 'not yet'
  elseif state == 'unreachable' then
    return 'unreachable'
  end
  return 'no conclusion'
end

local QUESTION_WORDS = {
  asked = 'waiting for an answer',
  answered = 'answered',
  timeout = 'nobody answered',
  declined = 'skipped',
  over_budget = 'over the question budget',
}

--- How a question settled, as people say it.
function M.question_word(state)
  return QUESTION_WORDS[state] or 'empty question'
end

local function join(...)
  local parts = {}
  for i = 1, select('#', ...) do
    local part = select(i, ...)
    if part ~= nil and part ~= '' then
      table.insert(parts, part)
    end
  end
  return table.concat(parts, ' · ')
end

-- Neovim's client reads a JSON null in an object as nil; keep vim.NIL out all the same
local function some(value)
  if value == vim.NIL then
    return nil
  end
  return value
end

local function basename(path)
  return (tostring(path):match('[^/]+$'))
end

--- What one update does to the history held (nil: none yet), as the protocol says: a whole
--- history newer than the one held replaces it, a turn whose revision follows the held one is
--- appended. Returns the history and 'replaced', 'appended', 'stale' or 'missed' (an update was
--- lost, or none is held: ask flower/history again).
function M.apply(held, update)
  if type(update.history) == 'table' then
    if held and held.revision >= update.revision then
      return held, 'stale'
    end
    local history = vim.deepcopy(update.history)
    history.revision = update.revision
    return history, 'replaced'
  end
  if type(update.turn) ~= 'table' or not held then
    return held, 'missed'
  end
  if update.revision <= held.revision then
    return held, 'stale'
  end
  if update.revision ~= held.revision + 1 then
    return held, 'missed'
  end
  local history = vim.deepcopy(held)
  table.insert(history.turns, update.turn)
  history.revision = update.revision
  return history, 'appended'
end

--- A request's answer against what updates brought meanwhile: the newer of the two.
function M.newer(held, answer)
  if held and held.revision > answer.revision then
    return held
  end
  return answer
end

-- -- rendering ------------------------------------------------------------------------------------

local Out = {}
Out.__index = Out

local function new_out()
  return setmetatable({ lines = {}, targets = {} }, Out)
end

--- Add a line at `depth`; `target` ({ path =, line = 0-based or nil }) is what <CR> opens there.
function Out:add(depth, text, target)
  table.insert(self.lines, string.rep('  ', depth) .. text)
  if target then
    self.targets[#self.lines] = target
  end
end

local function chart_line(h)
  local last = h.turns[#h.turns]
  local handoffs = 0
  for _, mark in ipairs(h.marks or {}) do
    if mark.kind == 'handoff' then
      handoffs = handoffs + 1
    end
  end
  return 'Context: '
    .. join(
      last and string.format('%s of %s', format.tokens(last.used), format.tokens(h.window)) or 'no turns yet',
      string.format('%d turns', #h.turns),
      handoffs == 1 and '1 handoff' or handoffs > 1 and string.format('%d handoffs', handoffs) or nil,
      string.format('handoff at %s', format.tokens(h.at))
    )
end

local function error_lines(out, depth, label, text)
  out:add(depth, label .. format.first_line(text))
end

--- What backs a check: the command and its exit code, the file and lines read, the search.
function M.evidence_basis(e)
  if e.kind == 'command' and some(e.command) then
    local code = some(e.exit_code)
    return string.format('ran %s, exit code %s', e.command, code ~= nil and code or '?')
  elseif e.kind == 'read' and some(e.path) then
    local first, last = some(e.line), some(e.end_line)
    if first and last and last ~= first then
      return string.format('read %s:%d-%d', e.path, first, last)
    end
    return first and string.format('read %s:%d', e.path, first) or ('read ' .. e.path)
  elseif e.kind == 'search' and (some(e.pattern) or some(e.path)) then
    local hits = some(e.hits)
    return string.format('searched %s in %s', e.pattern or '', some(e.path) or '.')
      .. (hits and string.format(': %d hits', hits) or '')
  end
  return nil
end

-- one check of a verdict that its failed lines do not cover, marked by the state the server gave
-- it (passed with what backs it, without evidence, not verifiable here); <CR> opens the file read
-- (else the check in 目标.md)
local STATE_MARKS = {
  passed = '✓',
  failed = '✗',
  no_evidence = '?',
  unverifiable = '–',
}
local STATE_WORDS = {
  failed = 'not passed',
  no_evidence = 'no evidence',
  unverifiable = 'cannot be verified here',
}

local function evidence_line(out, h, e, depth)
  local state = STATE_MARKS[e.state] and e.state or 'no_evidence'
  local basis = M.evidence_basis(e)
  local said = state == 'passed' and (basis or 'passed') or STATE_WORDS[state]
  local mark = STATE_MARKS[state]
  local target
  local path = some(e.path)
  if e.kind == 'read' and e.backed and path then
    if path:sub(1, 1) ~= '/' then
      path = vim.uri_to_fname(h.folder) .. '/' .. path:gsub('^%./', '')
    end
    local first = some(e.line)
    target = { path = path, line = first and first - 1 or nil }
  elseif some(e.check_line) then
    target = { path = h.goal, line = e.check_line }
  end
  out:add(depth, string.format('%s %s  (%s)', mark, e.check, said), target)
end

local function verdict_lines(out, h, verdict, depth)
  out:add(
    depth,
    join('Judged: ' .. M.verdict_word(verdict.state), format.first_line(verdict.reason, 100))
      .. string.format(' (%s, %s)', verdict.step, format.cost(verdict.cost_usd))
  )
  local failed_lines, failed_texts = {}, {}
  for _, failed in ipairs(verdict.failed or {}) do
    local line = some(failed.line)
    local where = line and string.format('目标.md:%d', line + 1) or '目标.md'
    out:add(depth + 1, string.format('✗ %s  (%s)', failed.text, where), { path = h.goal, line = line })
    failed_texts[failed.text] = true
    if line then
      failed_lines[line] = true
    end
  end
  for _, e in ipairs(verdict.evidence or {}) do
    local line = some(e.check_line)
    if not (failed_texts[e.check] or (line and failed_lines[line])) then -- its ✗ line says it
      evidence_line(out, h, e, depth + 1)
    end
  end
end

local function question_lines(out, q, depth)
  local asked = format.first_line(q.question, 100)
  local answer = format.first_line(some(q.answer), 80)
  local settled = q.state == 'answered' and ('→ ' .. answer)
    or (M.question_word(q.state) .. (answer ~= '' and (': ' .. answer) or ''))
  local waited = some(q.waited_s)
  out:add(
    depth,
    join('? ' .. (asked ~= '' and asked or '(empty question)'), settled, waited and ('waited ' .. format.duration(waited)))
  )
end

local function handoff_lines(out, handoff, depth)
  local path = some(handoff.path)
  out:add(
    depth,
    join(
      string.format('Handoff → generation %s', (handoff.generation or 0) > 0 and handoff.generation or '?'),
      'at ' .. format.tokens(handoff.used),
      handoff.degraded and 'degraded' or nil,
      path and basename(path) or 'its document is no longer on disk'
    ),
    path and { path = path } or nil
  )
end

local function round_children(out, h, round, depth)
  if some(round.verdict) then
    verdict_lines(out, h, round.verdict, depth)
  end
  if some(round.judge_error) then
    error_lines(out, depth, 'Judge failed: ', round.judge_error)
  end
  for _, q in ipairs(round.questions or {}) do
    question_lines(out, q, depth)
  end
  for _, handoff in ipairs(round.handoffs or {}) do
    handoff_lines(out, handoff, depth)
  end
  if (round.attempts or 1) > 1 then
    local retries = round.attempts - 1
    out:add(depth, retries == 1 and '↻ 1 retry' or string.format('↻ %d retries', retries))
    for _, e in ipairs(round.errors or {}) do
      error_lines(out, depth + 1, '! ', e)
    end
  end
  if some(round.error) and round.status ~= 'running' then
    error_lines(out, depth, '! ', round.error)
  end
end

local function status_word(round)
  if round.status == 'running' then
    return 'running'
  elseif some(round.verdict) then
    return M.verdict_word(round.verdict.state)
  elseif round.status == 'failed' then
    return 'failed'
  elseif round.status == 'unfinished' then
    return 'unfinished'
  elseif some(round.judge_error) then
    return 'judge failed'
  end
  return 'done'
end

local function judged(round)
  return some(round.verdict) ~= nil
end

local function round_lines(out, h, round, depth)
  local verdict = judged(round) and round.verdict or nil
  out:add(
    depth,
    join(
      string.format('Round %d', round.number),
      status_word(round),
      format.cost(round.cost_usd + (verdict and verdict.cost_usd or 0)),
      format.duration(round.duration_s + (verdict and verdict.duration_s or 0))
    )
  )
  round_children(out, h, round, depth + 1)
end

local function step_lines(out, h, step, depth)
  local count = 0
  for _, r in ipairs(step.rounds) do
    if judged(r) then
      count = count + 1
    end
  end
  local last = step.rounds[#step.rounds]
  local flat = #step.rounds == 1 and count == 0
  out:add(
    depth,
    join(
      (step.live and '▶ ' or '') .. step.name,
      step.live and 'running' or (flat and last and status_word(last)) or nil,
      count > 0 and string.format('%d judged', count) or nil,
      format.cost(step.cost_usd),
      format.duration(step.duration_s)
    )
  )
  if flat and last then
    round_children(out, h, last, depth + 1)
  else
    for _, r in ipairs(step.rounds) do
      round_lines(out, h, r, depth + 1)
    end
  end
end

local function wake_lines(out, h, wake)
  local elsewhere = (h.elsewhere or '') ~= '' and wake.number == #h.wakes and h.elsewhere or nil
  local stops = { budget = 'stopped: budget', no_progress = 'stopped: no progress' }
  local stop = not wake.live and stops[wake.stopped or ''] or nil
  local state = stop or wake.live and 'running' or elsewhere and 'running elsewhere' or (wake.ended_at or 0) == 0
    and 'unfinished' or nil
  out:add(
    0,
    join(
      string.format('Wake %d', wake.number),
      state,
      format.cost(wake.cost_usd),
      format.duration(wake.duration_s),
      string.format('%d turns', wake.num_turns or 0),
      format.time(wake.started_at) ~= '' and ('started ' .. format.time(wake.started_at)) or nil
    )
  )
  if elsewhere then
    out:add(1, 'Working on it now: ' .. elsewhere)
  elseif stop and (wake.stop_line or '') ~= '' then
    out:add(1, wake.stop_line)
  elseif state == 'unfinished' then
    out:add(1, 'Its process ended inside a step: :FlowerContinue picks it up.')
  end
  for _, step in ipairs(wake.steps) do
    step_lines(out, h, step, 1)
  end
end

--- The buffer's lines for a history (nil: not read yet), and what <CR> opens on each line.
function M.render(h)
  local out = new_out()
  if type(h) ~= 'table' then
    out:add(0, 'Flower history: reading…')
    return out.lines, out.targets
  end
  out:add(0, 'Flower history: ' .. (h.workspace or '?'))
  out:add(0, '<CR> on a check opens 目标.md at its line (a check backed by a file read: that file), on a handoff its document; R reads it again.')
  for _, problem in ipairs(h.problems or {}) do
    out:add(0, '! ' .. problem)
  end
  if #h.wakes == 0 then
    out:add(0, '')
    out:add(0, 'No run in this folder: :FlowerNew starts one.')
    return out.lines, out.targets
  end
  out:add(
    0,
    join(
      'Total: ' .. format.cost(h.cost_usd),
      format.duration(h.duration_s),
      string.format('%d turns', h.num_turns or 0),
      #h.wakes == 1 and '1 wake' or string.format('%d wakes', #h.wakes),
      h.live and ('running ' .. (h.live_step ~= '' and h.live_step or '')) or nil
    )
  )
  out:add(0, chart_line(h))
  if (h.earlier or 0) > 0 then
    out:add(0, string.format('Earlier work archived with a new run: %d wakes, left out', h.earlier))
  end
  for i = #h.wakes, 1, -1 do
    out:add(0, '')
    wake_lines(out, h, h.wakes[i])
  end
  return out.lines, out.targets
end

return M
