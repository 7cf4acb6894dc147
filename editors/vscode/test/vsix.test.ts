// Unit tests of the .vsix check (scripts/check-vsix.ts), on manifests built here.

import { strict as assert } from "node:assert";
import { test } from "node:test";

import { checkVsix } from "../scripts/check-vsix";

// eslint-disable-next-line @typescript-eslint/no-var-requires
const pkg = require("../../package.json");

function entries(manifest: object, extra: Record<string, string> = {}): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  m.set("extension/package.json", Buffer.from(JSON.stringify(manifest)));
  m.set("extension/dist/extension.js", Buffer.from('require("vscode-languageclient"); "cpals/jobStarted"; "cpals.trace"'));
  m.set("extension/media/counterexample.svg", Buffer.from("<svg/>"));
  for (const [k, v] of Object.entries(extra)) {
    m.set(k, Buffer.from(v));
  }
  return m;
}

test("this package.json passes the check", () => {
  assert.deepEqual(checkVsix(entries(pkg)), []);
});

test("a missing command, setting, view, bundle or a stray source file is reported", () => {
  const broken = JSON.parse(JSON.stringify(pkg));
  broken.contributes.commands = broken.contributes.commands.filter((c: { command: string }) => c.command !== "cpals.nextTraceStep");
  delete broken.contributes.configuration.properties["cpals.trigger"];
  broken.contributes.views.cpals = [];
  const problems = checkVsix(entries(broken, { "extension/src/extension.ts": "" }));
  assert.deepEqual(problems, [
    "command cpals.nextTraceStep is not contributed",
    "setting cpals.trigger is not contributed",
    "the counterexample view is not contributed (in the panel container `cpals`)",
    "extension/src/extension.ts should not be packaged",
  ]);
  const noBundle = entries(pkg);
  noBundle.delete("extension/dist/extension.js");
  assert.deepEqual(checkVsix(noBundle), ["extension/dist/extension.js (the extension's main) is missing"]);
  const noIcon = entries(pkg);
  noIcon.delete("extension/media/counterexample.svg");
  assert.deepEqual(checkVsix(noIcon), ["extension/media/counterexample.svg (the view container's icon) is missing"]);
});
