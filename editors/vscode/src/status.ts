// Status bar model (no VS Code API): a file's state (verifying… with how many verdicts are in, n proved, n violated, n unknown, stale) from its diagnostics and job notifications.

import type { Diag } from "./trace";

/** The server marks results of an older version of the file with this in the message. */
export const STALE_MARK = "(stale: the file changed since it was verified)";

export interface FileStatus {
  verifying: boolean;
  proved: number;
  violated: number;
  unknown: number;
  /** Some result is from an older version of the file (or the file does not parse). */
  stale: boolean;
  syntaxError: boolean;
  /** Properties still being verified (`verifying…`), and current verdicts already known. */
  pending: number;
  decided: number;
}

export interface StatusDiag extends Diag {
  message: string;
}

function code(d: Diag): string | number | undefined {
  return typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
}

/** Counts the server's diagnostics of a file; `verifying` comes from `cpals/jobStarted`/`cpals/jobDone`. */
export function fileStatus(diags: readonly StatusDiag[], verifying: boolean): FileStatus {
  const s: FileStatus = { verifying, proved: 0, violated: 0, unknown: 0, stale: false, syntaxError: false, pending: 0, decided: 0 };
  for (const d of diags) {
    if (d.source !== undefined && d.source !== "cpals") {
      continue;
    }
    switch (code(d)) {
      case "proved":
        s.proved++;
        break;
      case "violated":
        s.violated++;
        break;
      case "unknown":
        s.unknown++;
        break;
      case "syntax":
        s.syntaxError = true;
        break;
      case "verifying":
        s.pending++;
        break;
    }
    if (d.message.includes(STALE_MARK)) {
      s.stale = true;
    } else if (code(d) === "proved" || code(d) === "violated" || code(d) === "unknown") {
      s.decided++;
    }
  }
  if (s.syntaxError) {
    s.stale = true;
  }
  return s;
}

/** The status bar item while the server is not running (no counts: there are no results). */
export function serverDownText(why: string): { text: string; tooltip: string; error: boolean } {
  return {
    text: "$(error) cpals: server not running",
    tooltip: `The cpals server could not start (${why}). Set cpals.path to the cpals executable; click to start it again.`,
    error: true,
  };
}

/** The status bar item: its text (with a codicon), tooltip and whether it shows an error. */
export function statusText(s: FileStatus): { text: string; tooltip: string; error: boolean } {
  const counts = `${s.proved} proved, ${s.violated} violated, ${s.unknown} unknown`;
  if (s.verifying) {
    // Verdicts arrive as they are decided: say how far it is.
    const far = s.pending > 0 ? ` (${s.decided} of ${s.decided + s.pending} decided)` : "";
    return { text: `$(sync~spin) cpals: verifying…${far}`, tooltip: `cpals is verifying this file (results so far: ${counts})`, error: false };
  }
  const icon = s.violated > 0 ? "$(error)" : s.unknown > 0 ? "$(question)" : s.proved > 0 ? "$(pass)" : "$(circle-outline)";
  const stale = s.stale ? (s.syntaxError ? " (stale: syntax error)" : " (stale)") : "";
  const tooltip = s.stale
    ? "Results are from an older version of the file: save it to verify again (or run cpals: Verify File)."
    : "cpals results for this file. Click to verify it again.";
  return { text: `${icon} cpals: ${counts}${stale}`, tooltip, error: s.violated > 0 };
}
