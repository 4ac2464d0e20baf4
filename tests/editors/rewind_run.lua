-- :FlowerRewind through editors/neovim: a whole run (the clarifier's question answered with its
-- first option), a file of the person's own, then :FlowerRewind 1 with a remark; the confirmation
-- (vim.ui.select) lists the files the server's preview names, and Rewind is chosen a moment later.
local H = dofile(os.getenv('FLOWER_TEST_DIR') .. '/harness.lua')

H.run(function()
  local flower = require('flower')
  H.seen.notifications, H.seen.confirmations = {}, {}
  vim.notify = function(msg, level)
    table.insert(H.seen.notifications, { msg = msg, level = level })
  end
  vim.ui.select = function(items, opts, on_choice)
    if items[1] == 'Rewind' then
      table.insert(H.seen.confirmations, { prompt = opts.prompt, items = items })
    end
    vim.defer_fn(function()
      on_choice(items[1])
    end, 10)
  end
  vim.ui.input = function(_, on_confirm)
    vim.defer_fn(function()
      on_confirm(H.request)
    end, 10)
  end

  flower.setup({ cmd = H.cmd, root_dir = H.ws, init_options = { timeout_s = 60 } })
  H.wait('the server to initialize', function()
    local c = vim.lsp.get_client_by_id(flower.state.id)
    return c ~= nil and c.initialized
  end, H.SOON)
  vim.cmd('FlowerContinue')
  H.wait('the run to end', function()
    return H.ended(flower.state.log)
  end)
  H.seen.log = flower.state.log

  local mine = assert(io.open(H.ws .. '/mine.txt', 'w'))
  mine:write('mine\n')
  mine:close()
  local before = #H.seen.notifications
  vim.cmd('FlowerRewind 1 write the README first')
  H.wait('the rewind to be reported', function()
    for i = before + 1, #H.seen.notifications do
      if H.seen.notifications[i].msg:match("^Flower: rewound to after round 1's verdict") then
        return true
      end
    end
    return false
  end, H.SOON)
  vim.cmd('FlowerRewind x')
  H.wait('the usage line', function()
    return H.seen.notifications[#H.seen.notifications].msg:match('usage: :FlowerRewind N') ~= nil
  end, H.SOON)
end)
