-- The cpals Neovim plugin: starts `cpals lsp` for C buffers, enables inlay hints, adds :CpalsVerify and :CpalsTrace (counterexample to the quickfix list) and a status line text (`require('cpals').status()`).
local M = {}

--- Defaults of `require('cpals').setup{}`.
M.defaults = {
  -- The server command; `cmd[1]` is looked up on PATH.
  cmd = { 'cpals', 'lsp' },
  filetypes = { 'c' },
  -- The project root: the nearest folder with one of these (else the file's folder).
  root_markers = { '.git' },
  -- Server settings (README, "Using it in an editor"): analysis, trigger, debounceMs,
  -- timeoutSeconds, workers, dataModel, provedSeverity, nativeExecution, compileCommands,
  -- assumeAllocationsSucceed.
  -- Empty: the server's defaults.
  settings = {},
  -- Show loop invariants as inlay hints.
  inlay_hints = true,
  -- Open the quickfix window after :CpalsTrace.
  open_quickfix = true,
}

M.config = vim.deepcopy(M.defaults)
M.did_setup = false

--- URIs with a verification running (from `cpals/jobStarted` / `cpals/jobDone`).
M.verifying = {}

local job_handlers = {
  ['cpals/jobStarted'] = function(_, params)
    if params and params.verify then M.verifying[params.uri] = true end
    vim.cmd('redrawstatus')
  end,
  ['cpals/jobDone'] = function(_, params)
    if params then M.verifying[params.uri] = nil end
    vim.cmd('redrawstatus')
  end,
}

local function clients(buf)
  return vim.lsp.get_clients({ name = 'cpals', bufnr = buf })
end

local function notify(msg, level)
  vim.notify('cpals: ' .. msg, level or vim.log.levels.INFO)
end

--- Starts (or reuses) the server for a buffer.
function M.start(buf)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  local file = vim.api.nvim_buf_get_name(buf)
  local root = vim.fs.root(buf, M.config.root_markers) or (file ~= '' and vim.fs.dirname(file)) or vim.fn.getcwd()
  -- An empty Lua table would be sent as a JSON array; the server wants an object.
  local settings = next(M.config.settings) == nil and vim.empty_dict() or vim.deepcopy(M.config.settings)
  return vim.lsp.start({
    name = 'cpals',
    cmd = M.config.cmd,
    root_dir = root,
    -- Also answered to `workspace/configuration` (section `cpals`).
    settings = { cpals = settings },
    init_options = { settings = settings, notifyJobs = true },
    handlers = job_handlers,
    on_attach = function(_, b)
      if M.config.inlay_hints and vim.lsp.inlay_hint then
        vim.lsp.inlay_hint.enable(true, { bufnr = b })
      end
    end,
  }, { bufnr = buf })
end

--- Runs a server command for the current buffer; `on_result(err, result)` gets the answer.
local function execute(buf, command, arguments, on_result)
  local c = clients(buf)[1]
  if not c then
    notify('the server is not running for this buffer (is it a C file? see :checkhealth cpals)', vim.log.levels.ERROR)
    return false
  end
  local handler = function(err, result)
    if on_result then
      on_result(err, result)
    elseif err then
      notify(command .. ': ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
  end
  local params = { command = command, arguments = arguments }
  if vim.fn.has('nvim-0.11') == 1 then
    c:request('workspace/executeCommand', params, handler, buf)
  else
    c.request('workspace/executeCommand', params, handler, buf)
  end
  return true
end

--- :CpalsVerify: verify the current file again (even when cached).
function M.verify(buf)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  return execute(buf, 'cpals.verifyFile', { vim.uri_from_bufnr(buf) })
end

--- The line (0-based) of the violation the cursor means: on the cursor's line, else the
--- nearest one before it, else the first in the buffer.
function M.violation_line(buf, cursor_line)
  local lines = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source == 'cpals' and d.code == 'violated' then
      if d.lnum <= cursor_line and cursor_line <= (d.end_lnum or d.lnum) then
        return d.lnum
      end
      table.insert(lines, d.lnum)
    end
  end
  table.sort(lines)
  local best = lines[1]
  for _, l in ipairs(lines) do
    if l <= cursor_line then best = l end
  end
  return best
end

--- Quickfix entries for a `cpals.trace` answer: one per step, with its statement and values.
function M.trace_items(trace)
  local items = {}
  for _, s in ipairs(trace.steps or {}) do
    local text = s.message
    if type(s.input) == 'table' then
      text = string.format('%s [input: %s() = %s]', text, s.input[1], s.input[2])
    end
    table.insert(items, {
      filename = vim.uri_to_fname(s.uri),
      lnum = s.range.start.line + 1,
      col = s.range.start.character + 1,
      end_lnum = s.range['end'].line + 1,
      end_col = s.range['end'].character + 1,
      text = text,
      type = 'I',
    })
  end
  return items
end

--- :CpalsTrace: the counterexample of the violation under (or before) the cursor, as the
--- quickfix list (`:cnext`/`:cprev` step through it). `on_done(items)` runs when it is set.
function M.trace(buf, on_done)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  local cursor = vim.api.nvim_win_get_cursor(0)[1] - 1
  local line = M.violation_line(buf, cursor)
  if not line then
    notify('no violated assertion in this buffer', vim.log.levels.WARN)
    return false
  end
  return execute(buf, 'cpals.trace', { vim.uri_from_bufnr(buf), line }, function(err, trace)
    if err or not trace then
      notify('cpals.trace: ' .. (err and err.message or 'no answer'), vim.log.levels.ERROR)
      return
    end
    local items = M.trace_items(trace)
    local stale = trace.stale and ' (stale)' or ''
    local title = string.format('cpals: counterexample, line %d: %s%s', trace.range.start.line + 1, trace.message, stale)
    vim.fn.setqflist({}, ' ', { title = title, items = items })
    if M.config.open_quickfix then
      vim.cmd('botright copen')
      vim.cmd('wincmd p')
    end
    if on_done then on_done(items) end
  end)
end

--- The buffer's state for a status line, as the VS Code status bar says it:
--- `cpals: verifying… (1 of 2 decided)` while a job runs (verdicts arrive as they are
--- decided), else `cpals: 1 proved, 1 violated, 0 unknown` (with `(stale)` when some result is
--- from an older version of the file); '' for a buffer the server does not handle.
function M.status(buf)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  if #clients(buf) == 0 then return '' end
  local n = { proved = 0, violated = 0, unknown = 0, verifying = 0 }
  local stale, decided = false, 0
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source == 'cpals' and n[d.code] then
      n[d.code] = n[d.code] + 1
      local is_stale = (d.message or ''):find('(stale', 1, true) ~= nil
      stale = stale or is_stale
      if d.code ~= 'verifying' and not is_stale then decided = decided + 1 end
    end
  end
  if M.verifying[vim.uri_from_bufnr(buf)] then
    if n.verifying > 0 then
      return string.format('cpals: verifying… (%d of %d decided)', decided, decided + n.verifying)
    end
    return 'cpals: verifying…'
  end
  return string.format('cpals: %d proved, %d violated, %d unknown%s', n.proved, n.violated, n.unknown, stale and ' (stale)' or '')
end

--- `require('cpals').setup{}`: options as in `M.defaults`.
function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  -- Lists and the settings replace the defaults instead of merging index by index.
  for _, k in ipairs({ 'cmd', 'filetypes', 'root_markers', 'settings' }) do
    if opts and opts[k] ~= nil then M.config[k] = vim.deepcopy(opts[k]) end
  end
  M.did_setup = true
  local group = vim.api.nvim_create_augroup('cpals', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = M.config.filetypes,
    callback = function(ev) M.start(ev.buf) end,
  })
  -- Buffers opened before setup.
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.tbl_contains(M.config.filetypes, vim.bo[b].filetype) then
      M.start(b)
    end
  end
  vim.api.nvim_create_user_command('CpalsVerify', function() M.verify(0) end, { desc = 'cpals: verify the current file again' })
  vim.api.nvim_create_user_command('CpalsTrace', function() M.trace(0) end, { desc = 'cpals: counterexample under the cursor to the quickfix list' })
end

return M
