// Unit tests of the status bar model: counts, verifying, stale, syntax errors.

import { strict as assert } from "node:assert";
import { test } from "node:test";

import { fileStatus, serverDownText, STALE_MARK, StatusDiag, statusText } from "../src/status";

const r = (line: number) => ({ start: { line, character: 0 }, end: { line, character: 5 } });
const d = (code: string, message = code, source = "cpals"): StatusDiag => ({ code, message, source, range: r(1) });

test("counts proved, violated and unknown properties of the server only", () => {
  const s = fileStatus([d("proved"), d("proved"), d("violated"), d("unknown"), d("unreachable"), d("violated", "x", "gcc")], false);
  assert.deepEqual(s, { verifying: false, proved: 2, violated: 1, unknown: 1, stale: false, syntaxError: false, pending: 0, decided: 4 });
  const t = statusText(s);
  assert.equal(t.text, "$(error) cpals: 2 proved, 1 violated, 1 unknown");
  assert.equal(t.error, true);
});

test("codes as VS Code gives them ({ value }) count too", () => {
  const s = fileStatus([{ code: { value: "proved" }, source: "cpals", message: "m", range: r(2) }], false);
  assert.equal(s.proved, 1);
  assert.equal(statusText(s).text, "$(pass) cpals: 1 proved, 0 violated, 0 unknown");
});

test("verifying wins over the counts, stale and syntax errors are shown", () => {
  assert.equal(statusText(fileStatus([d("proved")], true)).text, "$(sync~spin) cpals: verifying…");
  const stale = fileStatus([d("violated", `assertion fails${" " + STALE_MARK}`)], false);
  assert.equal(stale.stale, true);
  assert.equal(statusText(stale).text, "$(error) cpals: 0 proved, 1 violated, 0 unknown (stale)");
  const broken = fileStatus([d("syntax", "expected ';'"), d("unknown")], false);
  assert.equal(statusText(broken).text, "$(question) cpals: 0 proved, 0 violated, 1 unknown (stale: syntax error)");
  assert.equal(statusText(fileStatus([], false)).text, "$(circle-outline) cpals: 0 proved, 0 violated, 0 unknown");
});

test("a server that is not running shows no counts", () => {
  const t = serverDownText("spawn /nonexistent/cpals ENOENT");
  assert.equal(t.text, "$(error) cpals: server not running");
  assert.match(t.tooltip, /ENOENT/);
  assert.doesNotMatch(t.text, /proved/);
  assert.equal(t.error, true);
});

test("while verifying, the verdicts already in and the properties still open are counted", () => {
  const s = fileStatus([d("proved"), d("verifying", "verifying…"), d("proved", `p ${STALE_MARK}`)], true);
  assert.equal(statusText(s).text, "$(sync~spin) cpals: verifying… (1 of 2 decided)");
});
