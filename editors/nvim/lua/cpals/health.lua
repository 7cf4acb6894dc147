-- :checkhealth cpals: Neovim's version, the cpals binary and its version, setup and attached clients.
local M = {}

function M.check()
  local health = vim.health
  health.start('cpals')
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.10 or later is needed (vim.lsp.start with inlay hints, vim.fs.root)')
  end
  local cpals = require('cpals')
  if not cpals.did_setup then
    health.warn("require('cpals').setup{} has not run: no server is started for C buffers")
  end
  local cmd = cpals.config.cmd
  local bin = vim.fn.exepath(cmd[1])
  if bin == '' then
    health.error(string.format('`%s` not found (not on PATH nor a path to an executable)', cmd[1]), {
      'build and install it from the cpals repository: cargo install --path server',
      "or point the plugin at a binary: require('cpals').setup{ cmd = { '/path/to/cpals', 'lsp' } }",
    })
    return
  end
  local r = vim.system({ bin, '--version' }, { text = true }):wait(10000)
  local version = vim.trim(r.stdout or '')
  if r.code == 0 and version:match('^cpals ') then
    health.ok(string.format('%s (%s)', version, bin))
  else
    health.error(string.format('%s --version failed (exit %s): %s', bin, tostring(r.code), vim.trim((r.stderr or '') .. version)))
    return
  end
  local attached = vim.lsp.get_clients({ name = 'cpals' })
  if #attached > 0 then
    health.ok(string.format('server running (%d client%s)', #attached, #attached == 1 and '' or 's'))
  else
    health.info('no server running yet: open a C file')
  end
end

return M
