// Activation of the bundled extension (dist/extension.js) against a stand-in `vscode` module: every contributed command is registered, a server that cannot start is reported with the setting to fix, and deactivation after it does not throw.

import { strict as assert } from "node:assert";
import { test } from "node:test";
import Module = require("node:module");

/** What the extension did with the stand-in API. */
const registered: string[] = [];
const messages: string[] = [];
let serverPath: string | undefined;

/** A stand-in for any part of the API: every property is another stand-in, calls are recorded. */
function stub(path: string): any {
  return new Proxy(function () {}, {
    get(_, prop) {
      if (prop === "then") {
        return undefined; // not a promise
      }
      return stub(`${path}.${String(prop)}`);
    },
    set() {
      return true;
    },
    apply(_, __, args: any[]) {
      if (path === "vscode.commands.registerCommand") {
        registered.push(args[0]);
      }
      if (path === "vscode.window.showErrorMessage" || path === "vscode.window.showInformationMessage") {
        messages.push(String(args[0]));
        return Promise.resolve(undefined);
      }
      if (path === "vscode.workspace.getConfiguration().get") {
        return args[0] === "path" ? serverPath : undefined;
      }
      return stub(`${path}()`);
    },
    construct() {
      return stub(`${path}.new`);
    },
  });
}

// The names the bundle imports from `vscode` (esbuild copies them from the module object).
const NAMES = ["window", "workspace", "commands", "languages", "env", "extensions", "version", "StatusBarAlignment", "ThemeColor", "TreeItem", "TreeItemCollapsibleState", "ThemeIcon", "EventEmitter", "Range", "Selection", "TextEditorRevealType", "Uri", "Disposable", "Position"];
const vscode: Record<string, unknown> = new Proxy({} as Record<string, unknown>, {
  get: (_, prop) => (prop === "version" ? "1.82.0" : prop === "then" || prop === "__esModule" ? undefined : stub(`vscode.${String(prop)}`)),
  ownKeys: () => NAMES,
  getOwnPropertyDescriptor: (_, prop): PropertyDescriptor => ({ configurable: true, enumerable: true, value: vscode[prop as string] }),
});

const load = (Module as any)._load;
(Module as any)._load = function (request: string, ...rest: unknown[]) {
  return request === "vscode" ? vscode : load.call(this, request, ...rest);
};

test("activation registers every contributed command and reports a server that cannot start", async () => {
  serverPath = "/nonexistent/cpals";
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const ext = require("../../dist/extension.js");
  await ext.activate({ subscriptions: [] });
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const contributed: string[] = require("../../package.json").contributes.commands.map((c: { command: string }) => c.command);
  assert.deepEqual([...registered].sort(), [...contributed, "cpals.revealTraceStep"].sort());
  const failure = messages.find((m) => m.startsWith("cpals: could not start the server"));
  assert.ok(failure, messages.join("\n"));
  assert.match(failure, /\/nonexistent\/cpals/);
  assert.match(failure, /Set cpals\.path/);
  // Deactivation after a failed start does not throw ("Client is not running and can't be stopped").
  await ext.deactivate();
});
