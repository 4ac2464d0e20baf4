-- :FlowerHistory through a whole run: the buffer is opened before the run starts, follows it through
-- flower/historyUpdate alone (never read again), ends where a fresh flower/history says the story
-- is, and <CR> on a failed check, on a check's evidence and on a handoff opens what they are about.
local H = dofile(os.getenv('FLOWER_TEST_DIR') .. '/harness.lua')

H.run(function()
  local flower = require('flower')
  local history = require('flower.history')
  vim.notify = function() end
  -- every question: the first option, picked a moment later, as a picker plugin does
  vim.ui.select = function(items, _, on_choice)
    vim.defer_fn(function()
      on_choice(items[1])
    end, 10)
  end
  H.seen.snapshots, H.seen.reads, H.seen.updates = {}, 0, 0
  local read = flower.read_history
  flower.read_history = function(...)
    H.seen.reads = H.seen.reads + 1
    return read(...)
  end
  local on_update = flower.handlers['flower/historyUpdate']
  flower.handlers['flower/historyUpdate'] = function(...)
    H.seen.updates = H.seen.updates + 1
    return on_update(...)
  end

  flower.setup({ cmd = H.cmd, root_dir = H.ws, init_options = { timeout_s = 60, window = 200000 } })
  H.wait('the server to initialize', function()
    local c = vim.lsp.get_client_by_id(flower.state.id)
    return c ~= nil and c.initialized
  end, H.SOON)

  local function lines()
    local bufnr = vim.fn.bufnr('flower://history')
    return bufnr ~= -1 and vim.api.nvim_buf_get_lines(bufnr, 0, -1, false) or {}
  end
  local last = ''
  local function snapshot()
    local now = table.concat(lines(), '\n')
    if now ~= last then
      last = now
      table.insert(H.seen.snapshots, lines())
    end
  end

  local shown = false
  flower.show_history(function()
    shown = true
  end)
  H.wait('the first history', function()
    return shown
  end, H.SOON)
  snapshot()
  H.seen.buffer = vim.api.nvim_buf_get_name(0)

  vim.cmd('FlowerNew ' .. H.request)
  H.wait('the run to end', function()
    snapshot()
    return H.ended(flower.state.log)
  end)
  H.seen.log = flower.state.log
  -- the run's last word is a whole history with nothing live
  H.wait('the history to settle', function()
    snapshot()
    local h = flower.state.history
    return h ~= nil and #h.wakes > 0 and not h.live
  end, H.SOON)
  H.seen.final = lines()
  H.seen.final_reads = H.seen.reads

  -- what a fresh read of the story renders: the same lines
  local fresh
  vim.lsp.get_client_by_id(flower.state.id).request('flower/history', { folder = vim.uri_from_fname(H.ws) }, function(_, h)
    fresh = h
  end)
  H.wait('a fresh flower/history', function()
    return fresh ~= nil
  end, H.SOON)
  H.seen.fresh = history.render(fresh)

  -- <CR> on the first failed check, then on the handoff
  local function enter_on(pattern)
    vim.cmd('buffer flower://history')
    for i, line in ipairs(lines()) do
      if line:find(pattern, 1, true) then
        vim.api.nvim_win_set_cursor(0, { i, 0 })
        vim.cmd('execute "normal \\<CR>"')
        return { line = line, name = vim.api.nvim_buf_get_name(0), cursor = vim.api.nvim_win_get_cursor(0)[1] }
      end
    end
    error('no line with ' .. pattern)
  end
  H.seen.check = enter_on('✗ ')
  H.seen.evidence = enter_on('✓ ')
  H.seen.handoff = enter_on('Handoff → ')
end)
