// Unit tests of the settings mapping: what the server receives, and which executable is started.

import { strict as assert } from "node:assert";
import { test } from "node:test";

import { needsRestart, resolveServerPath, serverSettings } from "../src/settings";

test("only the keys the server knows are sent, unset and null ones are left out", () => {
  const cfg: Record<string, unknown> = {
    path: "/opt/cpals",
    analysis: "predicate",
    trigger: "onChange",
    debounceMs: 150,
    timeoutSeconds: 2.5,
    provedSeverity: "information",
    dataModel: "ILP32",
    workers: null,
    "trace.server": "verbose",
  };
  assert.deepEqual(serverSettings((k) => cfg[k]), {
    analysis: "predicate",
    trigger: "onChange",
    debounceMs: 150,
    timeoutSeconds: 2.5,
    provedSeverity: "information",
    dataModel: "ILP32",
  });
  assert.deepEqual(serverSettings(() => undefined), {});
  assert.deepEqual(serverSettings((k) => (k === "workers" ? 2 : undefined)), { workers: 2 });
});

test("the defaults declared in package.json map to the server's defaults", () => {
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const pkg = require("../../package.json");
  const props = pkg.contributes.configuration.properties as Record<string, { default: unknown }>;
  const got = serverSettings((k) => props[`cpals.${k}`]?.default);
  // The server's default analysis is `combined` (server/src/lsp/session/settings.rs).
  assert.deepEqual(got, { analysis: "combined", trigger: "onSave", debounceMs: 300, timeoutSeconds: 30, provedSeverity: "hint", dataModel: "LP64", nativeExecution: "sandboxed", compileCommands: "", assumeAllocationsSucceed: false });
  // Every server setting is declared, with the server's key.
  for (const k of Object.keys(got)) {
    assert.ok(props[`cpals.${k}`], `cpals.${k} is declared`);
  }
  assert.ok(props["cpals.workers"], "cpals.workers is declared");
});

test("the server path: PATH by default, ~ and ${workspaceFolder} expanded", () => {
  assert.equal(resolveServerPath(undefined, "/home/u", undefined), "cpals");
  assert.equal(resolveServerPath("  ", "/home/u", undefined), "cpals");
  assert.equal(resolveServerPath("cpals", "/home/u", "/w"), "cpals");
  assert.equal(resolveServerPath("~/.cargo/bin/cpals", "/home/u", undefined), "/home/u/.cargo/bin/cpals");
  assert.equal(resolveServerPath("${workspaceFolder}/target/release/cpals", "/home/u", "/w/p"), "/w/p/target/release/cpals");
  assert.equal(resolveServerPath("/opt/~x/cpals", "/home/u", undefined), "/opt/~x/cpals");
  assert.throws(() => resolveServerPath("${workspaceFolder}/cpals", "/home/u", undefined), /no folder is open/);
});

test("only a change of the path restarts the server", () => {
  assert.equal(needsRestart((s) => s === "cpals.path"), true);
  assert.equal(needsRestart((s) => s === "cpals.trigger"), false);
});
