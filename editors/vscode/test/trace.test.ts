// Unit tests of the counterexample model, on a `cpals.trace` answer recorded from the server (test/fixtures/loops-trace.json, checked against the server by tests/tests/lsp.rs).

import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { Diag, functionAt, Lens, moveStep, parseTrace, renderSteps, stepDescription, traceTitle, violationLine, keptRelated, lensCommand } from "../src/trace";

const fixture = JSON.parse(fs.readFileSync(path.join(__dirname, "../../test/fixtures/loops-trace.json"), "utf8"));

test("the recorded trace parses and lists every step with its values", () => {
  const t = parseTrace(fixture);
  const items = renderSteps(t);
  assert.equal(items.length, t.steps.length);
  assert.ok(items.length > 10, `a loop of 10 iterations has more steps than ${items.length}`);
  // The input that reproduces the failure comes first, at `int n = __VERIFIER_nondet_int();` (line 12).
  assert.equal(items[0].label, "1. n = __VERIFIER_nondet_int()");
  assert.equal(items[0].description, "__VERIFIER_nondet_int() = 3 · n = 3");
  assert.equal(items[0].line, 12);
  assert.match(items[0].tooltip, /^step 1 of \d+ \(main, line 12\)\n/);
  // Branches show the way taken, loop steps their values; the last step is the assertion.
  assert.ok(items.some((s) => /^true( · |$)/.test(s.description)));
  assert.ok(items.some((s) => /^false( · |$)/.test(s.description)));
  assert.ok(items.some((s) => s.description.includes("i = 10")));
  const last = items[items.length - 1];
  assert.equal(last.line, 25);
  assert.equal(`${last.label} | ${last.description}`, "41. n + s != 23 | false · n = 3, s = 20");
  assert.equal(items.map((s) => s.index).join(), [...items.keys()].join());
  assert.equal(traceTitle(t), `line 25: ${t.message}`);
  assert.equal(traceTitle({ ...t, stale: true }), `line 25: ${t.message} (stale)`);
});

test("answers that are not traces are rejected", () => {
  assert.throws(() => parseTrace(null), /not a cpals trace/);
  assert.throws(() => parseTrace({ uri: "file:///a.c", steps: [] }), /not a cpals trace/);
  assert.throws(() => parseTrace({ ...fixture, steps: [{ uri: "file:///a.c" }] }), /not a trace step/);
});

test("a step's description: input, branch, values", () => {
  const base = { message: "", uri: "u", range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } }, function: "f", text: "x" };
  assert.equal(stepDescription({ ...base, values: [], input: null, branch: null }), "");
  assert.equal(stepDescription({ ...base, values: [["a", "1"], ["b", "-2"]], input: null, branch: false }), "false · a = 1, b = -2");
  assert.equal(stepDescription({ ...base, values: [], input: ["__VERIFIER_nondet_uint", "7"], branch: null }), "__VERIFIER_nondet_uint() = 7");
});

test("next and previous stay within the trace", () => {
  assert.equal(moveStep(-1, 1, 5), 0);
  assert.equal(moveStep(-1, -1, 5), 4);
  assert.equal(moveStep(0, 1, 5), 1);
  assert.equal(moveStep(4, 1, 5), 4);
  assert.equal(moveStep(0, -1, 5), 0);
  assert.equal(moveStep(3, -1, 5), 2);
  assert.equal(moveStep(2, 1, 0), -1);
});

const range = (line: number, endLine = line) => ({ start: { line, character: 2 }, end: { line: endLine, character: 9 } });

test("the violation the cursor means: on its line, else the one before, else the first", () => {
  const diags: Diag[] = [
    { code: "proved", source: "cpals", range: range(3) },
    { code: "violated", source: "cpals", range: range(10, 11) },
    { code: { value: "violated" }, source: "cpals", range: range(20) },
    { code: "violated", source: "other", range: range(30) },
  ];
  assert.equal(violationLine(diags, 11), 10);
  assert.equal(violationLine(diags, 20), 20);
  assert.equal(violationLine(diags, 15), 10);
  assert.equal(violationLine(diags, 40), 20);
  assert.equal(violationLine(diags, 0), 10);
  assert.equal(violationLine(diags.slice(0, 1), 3), undefined);
});

test("the function at the cursor, from the server's code lenses", () => {
  const lens = (line: number, command: string, args: unknown[]): Lens => ({ range: range(line), command: { command, arguments: args } });
  const lenses = [
    lens(0, "cpals.verifyFunction", ["file:///a.c", "helper"]),
    lens(0, "cpals.showTrace", ["file:///a.c", 3, 0]),
    lens(9, "cpals.verifyFunction", ["file:///a.c", "main"]),
    lens(9, "cpals.verifyFunction", ["file:///a.c", "main"]),
  ];
  assert.equal(functionAt(lenses, 0), "helper");
  assert.equal(functionAt(lenses, 5), "helper");
  assert.equal(functionAt(lenses, 9), "main");
  assert.equal(functionAt(lenses, 100), "main");
  assert.equal(functionAt(lenses.slice(2), 3), undefined);
  assert.equal(functionAt([], 3), undefined);
});

test("a violation keeps only its inputs as related information (the steps are in the view)", () => {
  const related = [{ message: "input: __VERIFIER_nondet_int() = 3" }, { message: "step 1: n = 3" }, { message: "step 2: i = 0" }];
  assert.deepEqual(keptRelated(related), [{ message: "input: __VERIFIER_nondet_int() = 3" }]);
  assert.equal(keptRelated(undefined), undefined);
});

test("the lens \"show trace\" opens the Counterexample view on its violation", () => {
  const server = { title: "show trace", command: "cpals.showTrace", arguments: ["file:///a.c", 24, 0] };
  assert.deepEqual(lensCommand(server), { title: "show trace", command: "cpals.showCounterexample", arguments: [24] });
  const verify = { title: "verify again", command: "cpals.verifyFunction", arguments: ["file:///a.c", "main"] };
  assert.deepEqual(lensCommand(verify), verify);
});
