// Settings mapping (no VS Code API): the extension's `cpals.*` settings to the object the server reads, and the server command.

/** The settings the server understands (section `cpals` of `workspace/configuration`). */
export const SERVER_KEYS = ["analysis", "trigger", "debounceMs", "timeoutSeconds", "provedSeverity", "dataModel", "workers", "nativeExecution", "compileCommands", "assumeAllocationsSucceed"] as const;

export type ServerSettings = Partial<Record<(typeof SERVER_KEYS)[number], unknown>>;

/**
 * The object sent to the server, read through `get` (the `cpals` configuration section).
 * Only the keys the server knows are sent: `path` and `trace.server` are the extension's own,
 * and the server reports unknown keys as errors. Unset and `null` values are left out, so the
 * server keeps its defaults.
 */
export function serverSettings(get: (key: string) => unknown): ServerSettings {
  const out: ServerSettings = {};
  for (const key of SERVER_KEYS) {
    const v = get(key);
    if (v !== undefined && v !== null) {
      out[key] = v;
    }
  }
  return out;
}

/** Whether a configuration change (as tested by `affects`) needs a server restart. */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return affects("cpals.path");
}

/**
 * The executable to start, from the `cpals.path` setting: empty means `cpals` (on PATH); a
 * leading `~` is the home directory and `${workspaceFolder}` the first workspace folder.
 */
export function resolveServerPath(setting: unknown, home: string, workspaceFolder: string | undefined): string {
  let p = typeof setting === "string" ? setting.trim() : "";
  if (p === "") {
    return "cpals";
  }
  if (p === "~" || p.startsWith("~/")) {
    p = home + p.slice(1);
  }
  if (p.includes("${workspaceFolder}")) {
    if (workspaceFolder === undefined) {
      throw new Error(`cpals.path uses \${workspaceFolder} but no folder is open: ${p}`);
    }
    p = p.split("${workspaceFolder}").join(workspaceFolder);
  }
  return p;
}

/** The arguments that start the language server. */
export const SERVER_ARGS = ["lsp"];
