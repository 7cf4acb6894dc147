// Counterexample model (no VS Code API): the `cpals.trace` answer, its steps as list entries, which violation the cursor means, stepping.

/** A position and a range as LSP sends them (0-based). */
export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}

/** One step of a counterexample, as the server's `cpals.trace` command returns it. */
export interface TraceStep {
  message: string;
  uri: string;
  range: Range;
  function: string;
  text: string;
  /** Variable values after the step, as `[name, value]` pairs. */
  values: [string, string][];
  /** The input chosen by a nondet call: `[function, value]`. */
  input: [string, string] | null;
  /** The branch taken, for a condition. */
  branch: boolean | null;
}

/** The answer of `cpals.trace URI LINE`. */
export interface Trace {
  uri: string;
  range: Range;
  function: string;
  message: string;
  stale: boolean;
  steps: TraceStep[];
}

/** A step as the counterexample view lists it. */
export interface StepItem {
  index: number;
  /** `3. i++` */
  label: string;
  /** `i = 1, s = 2` or `__VERIFIER_nondet_int() = 3` or `true`. */
  description: string;
  /** The whole step, for the tooltip. */
  tooltip: string;
  uri: string;
  range: Range;
  /** 1-based, for display. */
  line: number;
}

/** Checks the shape of a `cpals.trace` answer (it comes from another process). */
export function parseTrace(v: unknown): Trace {
  const t = v as Trace;
  if (typeof t !== "object" || t === null || !Array.isArray(t.steps) || typeof t.uri !== "string" || !isRange(t.range)) {
    throw new Error(`not a cpals trace: ${JSON.stringify(v)}`);
  }
  for (const s of t.steps) {
    if (typeof s !== "object" || s === null || typeof s.uri !== "string" || !isRange(s.range)) {
      throw new Error(`not a trace step: ${JSON.stringify(s)}`);
    }
  }
  return t;
}

function isRange(r: unknown): r is Range {
  const x = r as Range;
  return typeof x === "object" && x !== null && typeof x.start?.line === "number" && typeof x.end?.line === "number";
}

/** What a step shows after its statement: the input it chose, the branch, its values. */
export function stepDescription(s: TraceStep): string {
  const parts: string[] = [];
  if (s.input) {
    parts.push(`${s.input[0]}() = ${s.input[1]}`);
  }
  if (s.branch !== null && s.branch !== undefined) {
    parts.push(s.branch ? "true" : "false");
  }
  const values = (s.values ?? []).map(([name, value]) => `${name} = ${value}`);
  if (values.length > 0) {
    parts.push(values.join(", "));
  }
  return parts.join(" · ");
}

/** The steps of a trace as list entries, in order. */
export function renderSteps(t: Trace): StepItem[] {
  return t.steps.map((s, i) => {
    const description = stepDescription(s);
    const where = `${s.function ? s.function + ", " : ""}line ${s.range.start.line + 1}`;
    return {
      index: i,
      label: `${i + 1}. ${s.text}`,
      description,
      tooltip: `step ${i + 1} of ${t.steps.length} (${where})\n${s.text}${description ? "\n" + description : ""}`,
      uri: s.uri,
      range: s.range,
      line: s.range.start.line + 1,
    };
  });
}

/** The title of the counterexample view: which violation, and whether the file changed since. */
export function traceTitle(t: Trace): string {
  const stale = t.stale ? " (stale)" : "";
  return `line ${t.range.start.line + 1}: ${t.message}${stale}`;
}

/** The step after moving by `delta` from `current` (-1: none shown yet), kept within the trace. */
export function moveStep(current: number, delta: number, count: number): number {
  if (count === 0) {
    return -1;
  }
  if (current < 0) {
    return delta >= 0 ? 0 : count - 1;
  }
  return Math.min(count - 1, Math.max(0, current + delta));
}

/** A diagnostic as far as choosing a violation needs it. */
export interface Diag {
  code?: string | number | { value: string | number };
  source?: string;
  range: Range;
}

function codeOf(d: Diag): string | number | undefined {
  return typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
}

/**
 * The line (0-based) of the violation the cursor means: the violated assertion on the cursor's
 * line, else the nearest one before it, else the first in the file; undefined when there is none.
 */
export function violationLine(diags: readonly Diag[], cursorLine: number): number | undefined {
  const lines = diags
    .filter((d) => codeOf(d) === "violated" && (d.source === undefined || d.source === "cpals"))
    .map((d) => d.range.start.line)
    .sort((a, b) => a - b);
  if (lines.length === 0) {
    return undefined;
  }
  const here = diags.find((d) => codeOf(d) === "violated" && d.range.start.line <= cursorLine && cursorLine <= d.range.end.line);
  if (here) {
    return here.range.start.line;
  }
  const before = lines.filter((l) => l <= cursorLine);
  return before.length > 0 ? before[before.length - 1] : lines[0];
}

/** A code lens as far as finding functions needs it. */
export interface Lens {
  range: Range;
  command?: { command: string; arguments?: unknown[] };
}

/**
 * The function the cursor is in, from the server's code lenses (`cpals.verifyFunction URI NAME`
 * sits on each function's first line): the last function that starts at or before the cursor.
 */
export function functionAt(lenses: readonly Lens[], cursorLine: number): string | undefined {
  let best: { line: number; name: string } | undefined;
  for (const l of lenses) {
    const name = l.command?.command === "cpals.verifyFunction" ? l.command.arguments?.[1] : undefined;
    if (typeof name !== "string" || l.range.start.line > cursorLine) {
      continue;
    }
    if (!best || l.range.start.line > best.line) {
      best = { line: l.range.start.line, name };
    }
  }
  return best?.name;
}

/**
 * The related information kept on a diagnostic: a violation's inputs only. VS Code lists
 * related information in the hover, and a whole counterexample there is too long; its steps
 * are in the Counterexample view (F7).
 */
export function keptRelated<T extends { message: string }>(related: readonly T[] | undefined): T[] | undefined {
  return related === undefined ? undefined : related.filter((r) => r.message.startsWith("input: "));
}

/** A code lens as the server sends it (only what is rewritten here). */
export interface LensCommand {
  title: string;
  command: string;
  arguments?: unknown[];
}

/**
 * The command a server code lens runs in VS Code: the server's `cpals.showTrace` (which moves
 * the editor to step 1 with `window/showDocument`) becomes the extension's Counterexample view
 * on the lens's violation (`cpals.showCounterexample` with its 0-based line); others stay.
 */
export function lensCommand(c: LensCommand): LensCommand {
  if (c.command !== "cpals.showTrace") {
    return c;
  }
  const line = Array.isArray(c.arguments) && typeof c.arguments[1] === "number" ? c.arguments[1] : undefined;
  return { title: c.title, command: "cpals.showCounterexample", arguments: line === undefined ? [] : [line] };
}
