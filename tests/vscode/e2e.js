// End-to-end test of the VS Code extension in code-server (VS Code in a browser), driven with
// puppeteer-core and Chromium; run by tests/tests/vscode.rs, which sets the environment below.
// It installs the packaged extension, opens the language-server fixture, waits for the
// results and checks through the DOM what a user sees: the violation's squiggle, the proof,
// the invariant's inlay hint, the code lens, the status bar, the Counterexample view after F7
// and F7 stepping; it saves screenshots along the way. It prints one JSON line with what it
// found (`{"checks": {...}, "errors": [...]}`) and exits 0 when every check passed.
//
// Environment: CODE_SERVER (the code-server executable), CHROMIUM, VSIX, CPALS (the server
// binary), WORKSPACE (a folder with loops.c), OUT (screenshots), PUPPETEER (the
// puppeteer-core module folder), TIMEOUT_MS (how long to wait for results).

"use strict";

const { spawn, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");

const env = (k) => {
  const v = process.env[k];
  if (!v) {
    throw new Error(`${k} is not set`);
  }
  return v;
};

const puppeteer = require(env("PUPPETEER"));
const timeout = Number(process.env.TIMEOUT_MS || 120000);
const out = env("OUT");
const result = { checks: {}, errors: [], screenshots: [] };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

async function waitFor(what, f, ms = timeout) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      last = await f();
      if (last) {
        return last;
      }
    } catch (e) {
      last = e;
    }
    await sleep(250);
  }
  throw new Error(`timed out waiting for ${what} (last: ${last})`);
}

async function shot(page, name) {
  const file = path.join(out, `${name}.png`);
  await page.screenshot({ path: file });
  result.screenshots.push(file);
}

function check(name, ok, detail) {
  result.checks[name] = ok ? true : detail || false;
  if (!ok) {
    result.errors.push(`${name}: ${detail}`);
  }
}

async function main() {
  fs.mkdirSync(out, { recursive: true });
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "cpals-vscode-"));
  const userData = path.join(home, "user-data");
  const extensions = path.join(home, "extensions");
  // `cpals.path` is machine-overridable and code-server is a remote window: machine settings.
  fs.mkdirSync(path.join(userData, "Machine"), { recursive: true });
  fs.writeFileSync(path.join(userData, "Machine", "settings.json"), JSON.stringify({ "cpals.path": env("CPALS") }));
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.writeFileSync(
    path.join(userData, "User", "settings.json"),
    JSON.stringify({
      "workbench.startupEditor": "none",
      "workbench.tips.enabled": false,
      "security.workspace.trust.enabled": false,
      "telemetry.telemetryLevel": "off",
      "extensions.autoUpdate": false,
      "extensions.autoCheckUpdates": false,
      "editor.inlayHints.enabled": "on",
      "workbench.colorTheme": "Default Light Modern",
      "workbench.secondarySideBar.defaultVisibility": "hidden",
      "chat.disableAIFeatures": true,
    }),
  );
  const common = ["--user-data-dir", userData, "--extensions-dir", extensions];
  const install = spawnSync(env("CODE_SERVER"), [...common, "--install-extension", env("VSIX")], { encoding: "utf8" });
  check("extension installed", install.status === 0, `code-server --install-extension: ${install.status} ${install.stderr}`);
  const port = await freePort();
  const server = spawn(
    env("CODE_SERVER"),
    [...common, "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", env("WORKSPACE")],
    { stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let serverLog = "";
  server.stdout.on("data", (d) => (serverLog += d));
  server.stderr.on("data", (d) => (serverLog += d));
  let browser;
  let page;
  try {
    await waitFor("code-server to listen", () => serverLog.includes("HTTP server listening"), 120000);
    browser = await puppeteer.launch({
      executablePath: env("CHROMIUM"),
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--window-size=1400,900"],
      defaultViewport: { width: 1400, height: 900 },
    });
    page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(env("WORKSPACE"))}`, { waitUntil: "domcontentloaded" });
    await waitFor("the workbench", () => page.$(".monaco-workbench"), 120000);
    await sleep(3000);
    // Open loops.c with Quick Open.
    await page.keyboard.down("Control");
    await page.keyboard.press("KeyP");
    await page.keyboard.up("Control");
    await waitFor("Quick Open", () => page.$(".quick-input-widget input"), 60000);
    await page.keyboard.type("loops.c");
    await waitFor("loops.c in Quick Open", async () => {
      const rows = await page.$$eval(".quick-input-list .monaco-list-row", (rs) => rs.map((r) => r.textContent || ""));
      return rows.some((r) => r.includes("loops.c"));
    }, 60000);
    await page.keyboard.press("Enter");
    await waitFor("the editor", () => page.$(".monaco-editor .view-lines"), 60000);
    // Results: the status bar item says what was found.
    const status = await waitFor("the status bar counts", async () => {
      const t = await page.$$eval(".statusbar-item", (items) => items.map((i) => i.textContent || "").find((s) => s.includes("cpals:")));
      return t && /1 proved, 1 violated/.test(t) ? t : undefined;
    });
    check("status bar", /1 proved, 1 violated, 0 unknown/.test(status), status);
    const squiggle = await waitFor("the violation's squiggle", () => page.$(".monaco-editor .squiggly-error"), 60000).catch((e) => e.message);
    check("violation squiggle", typeof squiggle !== "string", squiggle);
    const lens = await waitFor("the code lens", async () => {
      const t = await page.$$eval(".monaco-editor .codelens-decoration", (ls) => ls.map((l) => l.textContent || "").join(" | "));
      return t.includes("violation") ? t : undefined;
    }, 60000).catch((e) => e.message);
    check("code lens", /✗ 1 violation/.test(lens) && /show trace/.test(lens), lens);
    const hint = await waitFor("the invariant's inlay hint", async () => {
      const t = await page.$$eval(".monaco-editor .view-line", (ls) => ls.map((l) => (l.textContent || "").replace(/\u00a0/g, " ")).join("\n"));
      return /invariant: 0 <= i && i <= 10/.test(t) ? (t.match(/invariant: .*$/m) || ["invariant"])[0] : undefined;
    }, 60000).catch((e) => e.message);
    check("inlay hint", /invariant: 0 <= i && i <= 10/.test(hint), hint);
    // The proof: a hint diagnostic on the proved assertion (hover shows "proved: …").
    const proved = await page.$$eval(".monaco-editor .squiggly-hint, .monaco-editor .squiggly-info", (s) => s.length);
    check("proved hint", proved >= 1, `${proved} hint/info decorations`);
    await shot(page, "vscode-results");
    // F7 on the violated line: the Counterexample view lists the steps; F7 steps on.
    await page.keyboard.down("Control");
    await page.keyboard.press("KeyG");
    await page.keyboard.up("Control");
    await waitFor("Go to Line", () => page.$(".quick-input-widget input"), 60000);
    await page.keyboard.type("25");
    await page.keyboard.press("Enter");
    await sleep(500);
    await page.keyboard.press("F7");
    // The view lists the steps (only the rows in sight are in the DOM) under its title.
    const rows = await waitFor("the Counterexample view's steps", async () => {
      const r = await page.$$eval(".part.panel .monaco-list-row", (rs) =>
        rs.filter((x) => x.getBoundingClientRect().height > 0).map((x) => (x.textContent || "").replace(/\u00a0/g, " ")).filter((t) => /^\s*\d+\. /.test(t)),
      );
      // The title line comes with the steps, but may be drawn a moment after them.
      const title = await page.$eval(".part.panel", (p) => p.textContent || "").catch(() => "");
      return r.length >= 8 && /counterexample with \d+ steps/.test(title) ? r : undefined;
    }, 60000).catch((e) => e.message);
    const panel = await page.$eval(".part.panel", (p) => p.textContent || "").catch(() => "");
    check("counterexample view", Array.isArray(rows) && /^\s*1\. n = __VERIFIER_nondet_int\(\)/.test(rows[0]) && /counterexample with 41 steps/.test(panel), Array.isArray(rows) ? `${rows.length} rows: ${rows[0]}` : rows);
    // In the panel, not squeezed under the file tree: at least 8 steps in sight.
    check("counterexample rows visible", Array.isArray(rows) && rows.length >= 8, Array.isArray(rows) ? `${rows.length} rows visible` : rows);
    await shot(page, "vscode-counterexample");
    // The step shown is the selected row of the view.
    const focusedStep = async () =>
      page.$$eval(".part.panel .monaco-list-row.selected", (rs) => rs.map((r) => r.textContent || "").find((t) => /^\s*\d+\. /.test(t)) || "");
    const first = await waitFor("step 1 selected", async () => ((await focusedStep()).match(/^\s*1\. /) ? await focusedStep() : undefined), 60000).catch((e) => e.message);
    check("F7 shows step 1", /^\s*1\. /.test(first), first);
    await page.keyboard.press("F7");
    const second = await waitFor("step 2 selected", async () => ((await focusedStep()).match(/^\s*2\. /) ? await focusedStep() : undefined), 60000).catch((e) => e.message);
    check("F7 again steps on", /^\s*2\. /.test(second), second);
    await shot(page, "vscode-step");
    // The lens "show trace" opens the same view (not the server's command); a second click
    // steps on.
    const clickLens = async () => {
      const links = await page.$$(".monaco-editor .codelens-decoration a");
      for (const l of links) {
        if (((await l.evaluate((e) => e.textContent)) || "").includes("show trace")) {
          await l.click();
          return true;
        }
      }
      return false;
    };
    await page.keyboard.press("Escape");
    await sleep(500);
    const clicked = await waitFor("the `show trace` lens", clickLens, 60000).catch((e) => e.message);
    check("lens show trace", clicked === true, clicked);
    const byLens = await waitFor("step 1 from the lens", async () => ((await focusedStep()).match(/^\s*1\. /) ? await focusedStep() : undefined), 60000).catch((e) => e.message);
    check("lens opens the view at step 1", /^\s*1\. /.test(byLens), byLens);
    await waitFor("the `show trace` lens again", clickLens, 60000).catch(() => undefined);
    const byLens2 = await waitFor("step 2 from the lens", async () => ((await focusedStep()).match(/^\s*2\. /) ? await focusedStep() : undefined), 60000).catch((e) => e.message);
    check("lens again steps on", /^\s*2\. /.test(byLens2), byLens2);
    // The hover on the violation is short: no list of every step.
    await page.hover(".monaco-editor .squiggly-error");
    const hover = await waitFor("the hover", async () => {
      const t = await page.$$eval(".monaco-hover", (hs) => hs.map((h) => h.textContent || "").join(" "));
      return t.includes("counterexample with 41 steps") && t.includes("F7") ? t : undefined;
    }, 60000).catch((e) => e.message);
    check("short hover", /counterexample with 41 steps/.test(hover) && !/step 41/.test(hover) && !/cpals\.showTrace/.test(hover), hover.slice(0, 300));
    await shot(page, "vscode-hover");
  } catch (e) {
    result.errors.push(String(e && e.stack ? e.stack : e));
    if (page) {
      await shot(page, "vscode-failure").catch(() => undefined);
      result.statusBar = await page.$$eval(".statusbar-item", (i) => i.map((x) => x.textContent)).catch(() => undefined);
    }
  } finally {
    if (browser) {
      await browser.close().catch(() => undefined);
    }
    try {
      process.kill(-server.pid, "SIGTERM");
    } catch {
      // already gone
    }
    fs.rmSync(home, { recursive: true, force: true });
  }
  if (result.errors.length > 0) {
    result.serverLog = serverLog.slice(-4000);
  }
  console.log(JSON.stringify(result));
  process.exit(result.errors.length === 0 ? 0 : 1);
}

main().catch((e) => {
  console.log(JSON.stringify({ checks: {}, errors: [String(e)] }));
  process.exit(1);
});
