-- A whole run driven through editors/neovim by a scripted person: vim.ui.select and vim.ui.input
-- are answered asynchronously, as a picker plugin does, so nothing blocks the editor.
local H = dofile(os.getenv('FLOWER_TEST_DIR') .. '/harness.lua')

H.run(function()
  local flower = require('flower')
  H.seen.notifications = {}
  vim.notify = function(msg, level)
    table.insert(H.seen.notifications, { msg = msg, level = level })
  end
  H.seen.selects, H.seen.inputs, H.seen.meters = {}, {}, {}

  -- the person takes a moment, then picks the first option; meanwhile the editor must stay
  -- responsive and the question must still be waiting on the server (the handler returned at once)
  vim.ui.select = function(items, opts, on_choice)
    local pick = { prompt = opts.prompt, items = items }
    table.insert(H.seen.selects, pick)
    flower.show_state(function(state)
      pick.pending = vim.tbl_map(function(a)
        return a.id
      end, state.pending)
      on_choice(items[1])
    end)
  end
  vim.ui.input = function(opts, on_confirm)
    table.insert(H.seen.inputs, opts.prompt)
    vim.defer_fn(function()
      on_confirm(H.request)
    end, 10)
  end

  H.watch_goal()
  flower.setup({ cmd = H.cmd, root_dir = H.ws, init_options = { timeout_s = 60 } })
  H.wait('the server to initialize', function()
    local c = vim.lsp.get_client_by_id(flower.state.id)
    return c ~= nil and c.initialized
  end, H.SOON)

  -- nothing to continue yet: the plugin asks what to do (the server's `offer`) and starts
  vim.cmd('FlowerContinue')
  H.wait('the run to end', function()
    local meter = flower.statusline()
    if meter ~= '' then
      H.seen.meters[meter] = true
    end
    return H.ended(flower.state.log)
  end)
  H.seen.log = flower.state.log
  H.seen.statusline = flower.statusline()

  -- the state and a refusal, through the commands
  local state
  flower.show_state(function(s)
    state = s
  end)
  H.wait('flower/state', function()
    return state ~= nil
  end, H.SOON)
  H.seen.state = { running = state.running, waking = state.waking, verdict = state.verdict and state.verdict.state }
  vim.cmd('FlowerStop')
  H.wait('the refusal', function()
    return H.seen.notifications[#H.seen.notifications].msg:match('Nothing is running') ~= nil
  end, H.SOON)
  vim.cmd('FlowerState')
  H.wait('the state buffer', function()
    return vim.api.nvim_buf_get_name(0) == 'flower://state'
  end, H.SOON)
  H.seen.state_buffer = vim.api.nvim_buf_get_lines(0, 0, -1, false)

  -- the editor comes back to the folder: the resume banner, as a notification
  local first = flower.state.id
  vim.lsp.get_client_by_id(first).stop()
  H.wait('the server to exit', function()
    return flower.state.id == nil
  end, H.SOON)
  local before = #H.seen.notifications
  flower.start()
  H.wait('the banner', function()
    return #H.seen.notifications > before
  end, H.SOON)
  H.seen.banner = H.seen.notifications[#H.seen.notifications]
end)
