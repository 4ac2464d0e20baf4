-- A wake that stopped short (stopped: budget, stopped: no progress) says which stop it was and,
-- under it, the stop's line: why, and what continuing will do.
local H = dofile(os.getenv('FLOWER_TEST_DIR') .. '/harness.lua')

H.run(function()
  local history = require('flower.history')
  local function wake(number, stopped, line)
    return {
      number = number, run = 'r' .. number, started_at = 0, ended_at = 2, cost_usd = 0.01, num_turns = 3,
      duration_s = 5, live = false, steps = {}, stopped = stopped, stop_line = line,
    }
  end
  H.seen.lines = history.render({
    workspace = '/ws', revision = 1, window = 1000000, at = 950000, cost_usd = 0.02, duration_s = 10,
    num_turns = 6, live = false, live_step = '', elsewhere = '', earlier = 0, turns = {}, marks = {},
    problems = {},
    wakes = {
      wake(1, 'budget', 'stopped: budget —— to go on, run flower again with a new budget'),
      wake(2, 'no_progress', 'stopped: no progress —— run flower to go on, change the goal, or stop'),
    },
  })
end)
