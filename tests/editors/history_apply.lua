-- flower/historyUpdate applied as the protocol says (docs/history.md), and the renderer on the
-- edges: no history yet, no run, a question without an answer, a handoff whose document is gone.
local H = dofile(os.getenv('FLOWER_TEST_DIR') .. '/harness.lua')

H.run(function()
  local history = require('flower.history')
  local function h(revision, turns)
    return { revision = revision, turns = turns or {}, wakes = {}, marks = {} }
  end
  local turn = { at = 1, used = 10, session_id = 's', step = '干活', lane = '干活', generation = 1, wake = 1 }
  local cases = {}
  local function case(name, held, update)
    local got, applied = history.apply(held, update)
    cases[name] = { applied = applied, revision = got and got.revision, turns = got and #got.turns }
  end
  case('a turn with nothing held', nil, { folder = 'f', revision = 1, turn = turn })
  case('the next turn', h(3), { folder = 'f', revision = 4, turn = turn })
  case('a turn after a gap', h(3), { folder = 'f', revision = 5, turn = turn })
  case('an old turn', h(3), { folder = 'f', revision = 3, turn = turn })
  case('a newer whole history', h(3, { turn }), { folder = 'f', revision = 7, history = h(6) })
  case('an older whole history', h(8), { folder = 'f', revision = 7, history = h(6) })
  H.seen.cases = cases
  local held = h(3)
  history.apply(held, { folder = 'f', revision = 4, turn = turn })
  H.seen.untouched = #held.turns -- what was held is never changed in place

  H.seen.reading = history.render(nil)
  H.seen.empty = history.render({ workspace = '/ws', revision = 1, wakes = {}, turns = {}, marks = {}, problems = { 'manifest.json: damaged' } })
  local round = {
    number = 1, step = '干活', status = 'running', cost_usd = 0, duration_s = 0, attempts = 3,
    errors = { 'overloaded\nretrying', 'timeout' }, questions = {
      { id = 'q1', question = '', options = {}, state = 'asked', answer = '', asked_at = 1 },
      { id = 'q2', question = '用哪个?\n细节', options = { 'a' }, state = 'declined', answer = '不知道', asked_at = 1, waited_s = 75 },
    },
    handoffs = { { step = '干活', retired = 'a', generation = 2, at = 1, used = 158000, degraded = true } },
  }
  local step = { name = '干活', rounds = { round }, sessions = {}, cost_usd = 0.004, duration_s = 3780, live = true }
  H.seen.live = history.render({
    workspace = '/ws', goal = '/ws/.flower/notes/目标.md', revision = 1, window = 1000000, at = 950000,
    cost_usd = 0.004, duration_s = 3780, num_turns = 0, live = true, live_step = '干活', elsewhere = '',
    earlier = 2, turns = {}, marks = {}, problems = {},
    wakes = { { number = 1, run = 'r', started_at = 0, ended_at = 0, cost_usd = 0.004, duration_s = 3780, num_turns = 0, live = true, steps = { step } } },
  })
end)
