-- A whole run with Neovim's own LSP client and no flower code at all: standard handlers only.
-- The person stands in for the stock window/showMessageRequest prompt (its inputlist cannot run
-- headless): a question with options gets the first one; the request "what to do" is answered
-- in words with flower.answer, as the message says; what the server shows and logs is recorded.
local H = dofile(os.getenv('FLOWER_TEST_DIR') .. '/harness.lua')

H.run(function()
  H.seen.requests, H.seen.messages, H.seen.logs, H.seen.progress = {}, {}, {}, {}
  local id
  local function record(list, method)
    local stock = vim.lsp.handlers[method]
    return function(err, result, ctx, config)
      table.insert(list, result)
      return stock(err, result, ctx, config)
    end
  end
  local function answer_in_words(text)
    local c = vim.lsp.get_client_by_id(id)
    c.request('workspace/executeCommand', { command = 'flower.answer', arguments = { { text = text } } }, function(err, result)
      H.seen.answered = err and err.message or result.message
    end)
  end
  local handlers = {
    ['window/showMessage'] = record(H.seen.messages, 'window/showMessage'),
    ['window/logMessage'] = record(H.seen.logs, 'window/logMessage'),
    ['$/progress'] = record(H.seen.progress, '$/progress'),
    ['window/showMessageRequest'] = function(_, params)
      table.insert(H.seen.requests, params)
      local actions = params.actions or {}
      if #actions > 1 or params.message == os.getenv('FLOWER_TEST_OFFER') then
        return actions[1]
      end
      vim.schedule(function()
        answer_in_words(H.request)
      end)
      return vim.NIL -- the prompt is closed: the answer comes in words
    end,
  }
  local function start()
    return vim.lsp.start_client({
      name = 'flower',
      cmd = H.cmd,
      root_dir = H.ws,
      workspace_folders = { { uri = vim.uri_from_fname(H.ws), name = 'ws' } },
      init_options = { timeout_s = 60 },
      handlers = handlers,
    })
  end
  local function initialized()
    local c = vim.lsp.get_client_by_id(id)
    return c ~= nil and c.initialized
  end
  local function logged(pattern)
    for _, m in ipairs(H.seen.logs) do
      if m.message:match(pattern) then
        return m.message
      end
    end
  end

  H.watch_goal()
  id = start()
  H.wait('the server to initialize', initialized, H.SOON)
  local c = vim.lsp.get_client_by_id(id)
  c.request('workspace/executeCommand', { command = 'flower.continue' }, function(err, result)
    H.seen.continued = err and { error = err.message } or result
  end)
  H.wait('the run to end', function()
    return logged(os.getenv('FLOWER_TEST_ENDED')) ~= nil
  end)
  H.seen.ended = logged(os.getenv('FLOWER_TEST_ENDED'))

  -- a request without params, and a document this client cannot show
  c.request('flower/state', nil, function(err, result)
    H.seen.state = err and { error = err.message } or { running = result.running, waking = result.waking }
  end)
  c.request('workspace/executeCommand', { command = 'flower.openDocument', arguments = { { which = 'goal' } } }, function(err, result)
    H.seen.opened = err and { error = err.message } or result
  end)
  H.wait('flower/state and flower.openDocument', function()
    return H.seen.state ~= nil and H.seen.opened ~= nil
  end, H.SOON)

  -- a new server on the same folder: the resume banner, as a message
  c.stop()
  H.wait('the server to exit', function()
    return vim.lsp.get_client_by_id(id) == nil
  end, H.SOON)
  local before = #H.seen.messages
  id = start()
  H.wait('the banner', function()
    return #H.seen.messages > before
  end, H.SOON)
  H.seen.banner = H.seen.messages[#H.seen.messages]
  vim.lsp.get_client_by_id(id).stop()
end)
