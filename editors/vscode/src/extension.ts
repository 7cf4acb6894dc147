// The VS Code extension: starts `cpals lsp` through vscode-languageclient, adds the commands, the counterexample view and the status bar item.

import * as os from "os";
import * as vscode from "vscode";
import {
  CodeLensRequest,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
} from "vscode-languageclient/node";

import { needsRestart, resolveServerPath, SERVER_ARGS, serverSettings } from "./settings";
import { fileStatus, serverDownText, StatusDiag, statusText } from "./status";
import { functionAt, keptRelated, Lens, lensCommand, moveStep, parseTrace, renderSteps, StepItem, Trace, traceTitle, violationLine } from "./trace";

let client: LanguageClient | undefined;
/** Why the server is not running (it could not start), shown in the status bar. */
let serverDown: string | undefined;
let output: vscode.OutputChannel;
/** URIs (as the server writes them) with a verification running. */
const verifying = new Set<string>();

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration("cpals");
}

function settingsForServer() {
  const c = config();
  return serverSettings((key) => c.get(key));
}

function serverCommand(): string {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  return resolveServerPath(config().get("path"), os.homedir(), folder);
}

function makeClient(): LanguageClient {
  const command = serverCommand();
  const serverOptions: ServerOptions = { run: { command, args: SERVER_ARGS }, debug: { command, args: SERVER_ARGS } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "c" },
      { scheme: "untitled", language: "c" },
    ],
    initializationOptions: { notifyJobs: true, settings: settingsForServer() },
    outputChannel: output,
    middleware: {
      // The lens "show trace" opens the Counterexample view, not the server's command.
      provideCodeLenses: async (document, token, next) => {
        const lenses = await next(document, token);
        for (const l of lenses ?? []) {
          if (l.command) {
            const c = lensCommand(l.command);
            l.command = { title: c.title, command: c.command, arguments: c.arguments };
          }
        }
        return lenses;
      },
      handleDiagnostics: (uri, diagnostics, next) => {
        for (const d of diagnostics) {
          d.relatedInformation = keptRelated(d.relatedInformation);
        }
        next(uri, diagnostics);
      },
      workspace: {
        // The server asks for section `cpals`; it gets only the keys it knows (not `path`, `trace`).
        configuration: (params) => params.items.map((item) => (item.section === "cpals" ? settingsForServer() : null)),
      },
    },
  };
  const c = new LanguageClient("cpals", "cpals", serverOptions, clientOptions);
  c.onNotification("cpals/jobStarted", (p: { uri: string; verify: boolean }) => {
    if (p.verify) {
      verifying.add(p.uri);
      updateStatus();
    }
  });
  c.onNotification("cpals/jobDone", (p: { uri: string }) => {
    verifying.delete(p.uri);
    updateStatus();
  });
  return c;
}

/** Stops the client if it runs; a client that never started (or already stopped) is left alone. */
async function stopClient(): Promise<void> {
  const c = client;
  client = undefined;
  if (c?.isRunning()) {
    await c.stop().catch(() => undefined);
  }
}

async function startClient(): Promise<void> {
  verifying.clear();
  serverDown = undefined;
  try {
    client = makeClient();
    await client.start();
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    serverDown = msg;
    client = undefined;
    void vscode.window.showErrorMessage(`cpals: could not start the server (${msg}). Set cpals.path to the cpals executable.`, "Open Settings").then((a) => {
      if (a) {
        void vscode.commands.executeCommand("workbench.action.openSettings", "cpals.path");
      }
    });
  }
  updateStatus();
}

function protocolUri(uri: vscode.Uri): string {
  return client ? client.code2ProtocolConverter.asUri(uri) : uri.toString();
}

function activeC(): vscode.TextEditor | undefined {
  const e = vscode.window.activeTextEditor;
  if (!e || e.document.languageId !== "c") {
    void vscode.window.showInformationMessage("cpals: open a C file first.");
    return undefined;
  }
  return e;
}

async function serverCommandRequest(command: string, args: unknown[]): Promise<unknown> {
  if (!client || !client.isRunning()) {
    throw new Error("the cpals server is not running");
  }
  return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
}

function reportError(what: string, e: unknown): void {
  const msg = e instanceof Error ? e.message : String(e);
  void vscode.window.showErrorMessage(`cpals: ${what}: ${msg}`);
}

// ---- status bar ----

let statusItem: vscode.StatusBarItem;

function updateStatus(): void {
  if (!statusItem) {
    return;
  }
  const e = vscode.window.activeTextEditor;
  if (!e || e.document.languageId !== "c") {
    statusItem.hide();
    return;
  }
  const diags: StatusDiag[] = vscode.languages.getDiagnostics(e.document.uri).map(toDiag);
  const s =
    serverDown !== undefined || !client
      ? serverDownText(serverDown ?? "it is not running")
      : statusText(fileStatus(diags, verifying.has(protocolUri(e.document.uri))));
  statusItem.text = s.text;
  statusItem.tooltip = s.tooltip;
  statusItem.backgroundColor = s.error ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  statusItem.command = serverDown !== undefined ? "cpals.restartServer" : "cpals.verify";
  statusItem.show();
}

function toDiag(d: vscode.Diagnostic): StatusDiag {
  const code = typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
  return {
    code,
    source: d.source,
    message: d.message,
    range: {
      start: { line: d.range.start.line, character: d.range.start.character },
      end: { line: d.range.end.line, character: d.range.end.character },
    },
  };
}

// ---- counterexample view ----

class TraceView implements vscode.TreeDataProvider<StepItem> {
  trace: Trace | undefined;
  items: StepItem[] = [];
  current = -1;
  private readonly changed = new vscode.EventEmitter<StepItem | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  set(trace: Trace | undefined): void {
    this.trace = trace;
    this.items = trace ? renderSteps(trace) : [];
    this.current = -1;
    this.changed.fire(undefined);
  }

  select(i: number): void {
    this.current = i;
    this.changed.fire(undefined);
  }

  getChildren(element?: StepItem): StepItem[] {
    return element ? [] : this.items;
  }

  getParent(): undefined {
    return undefined;
  }

  getTreeItem(s: StepItem): vscode.TreeItem {
    const item = new vscode.TreeItem(s.label, vscode.TreeItemCollapsibleState.None);
    item.description = s.description ? `${s.description}  (line ${s.line})` : `line ${s.line}`;
    item.tooltip = s.tooltip;
    item.id = `step-${s.index}`;
    item.iconPath = new vscode.ThemeIcon(s.index === this.current ? "debug-stackframe" : "circle-small");
    item.command = { command: "cpals.revealTraceStep", title: "Reveal step", arguments: [s.index] };
    return item;
  }
}

const stepDecoration = vscode.window.createTextEditorDecorationType({
  isWholeLine: true,
  backgroundColor: new vscode.ThemeColor("editor.stackFrameHighlightBackground"),
  after: { color: new vscode.ThemeColor("editorCodeLens.foreground"), margin: "0 0 0 2em" },
});

async function revealStep(view: TraceView, tree: vscode.TreeView<StepItem>, i: number): Promise<void> {
  const s = view.items[i];
  if (!s) {
    return;
  }
  view.select(i);
  const uri = client ? client.protocol2CodeConverter.asUri(s.uri) : vscode.Uri.parse(s.uri);
  const doc = await vscode.workspace.openTextDocument(uri);
  const editor = await vscode.window.showTextDocument(doc, { preserveFocus: false, preview: false });
  const range = new vscode.Range(s.range.start.line, s.range.start.character, s.range.end.line, s.range.end.character);
  editor.selection = new vscode.Selection(range.start, range.start);
  editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  const text = `step ${i + 1}/${view.items.length}${s.description ? ": " + s.description : ""}`;
  editor.setDecorations(stepDecoration, [{ range, renderOptions: { after: { contentText: text } } }]);
  if (tree.visible) {
    await tree.reveal(s, { select: true, focus: false });
  }
}

function clearTrace(view: TraceView, tree: vscode.TreeView<StepItem>): void {
  view.set(undefined);
  tree.message = undefined;
  for (const e of vscode.window.visibleTextEditors) {
    e.setDecorations(stepDecoration, []);
  }
  void vscode.commands.executeCommand("setContext", "cpals.traceActive", false);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("cpals");
  statusItem = vscode.window.createStatusBarItem("cpals.status", vscode.StatusBarAlignment.Left, 50);
  statusItem.name = "cpals";
  const view = new TraceView();
  const tree = vscode.window.createTreeView("cpals.counterexample", { treeDataProvider: view });
  context.subscriptions.push(output, statusItem, tree, stepDecoration);

  const reg = (id: string, f: (...args: any[]) => unknown) => context.subscriptions.push(vscode.commands.registerCommand(id, f));

  reg("cpals.verify", async () => {
    const e = activeC();
    if (e) {
      await serverCommandRequest("cpals.verifyFile", [protocolUri(e.document.uri)]).catch((err) => reportError("verify file", err));
    }
  });
  reg("cpals.verifyFunctionAtCursor", async () => {
    const e = activeC();
    if (!e || !client) {
      return;
    }
    try {
      const uri = protocolUri(e.document.uri);
      const lenses = ((await client.sendRequest(CodeLensRequest.type, { textDocument: { uri } })) ?? []) as Lens[];
      const name = functionAt(lenses, e.selection.active.line);
      if (!name) {
        void vscode.window.showInformationMessage("cpals: the cursor is not in a function the server knows (is the file parsed?).");
        return;
      }
      await serverCommandRequest("cpals.verifyFunction", [uri, name]);
    } catch (err) {
      reportError("verify function", err);
    }
  });
  reg("cpals.showCounterexample", async (lensLine?: number) => {
    const e = activeC();
    if (!e) {
      return;
    }
    // From a lens (its violation's line): a second click on the trace shown goes to its next step.
    if (typeof lensLine === "number" && view.trace && view.trace.range.start.line === lensLine && view.trace.uri === protocolUri(e.document.uri)) {
      await revealStep(view, tree, moveStep(view.current, 1, view.items.length));
      return;
    }
    const cursor = typeof lensLine === "number" ? lensLine : e.selection.active.line;
    const line = violationLine(vscode.languages.getDiagnostics(e.document.uri).map(toDiag), cursor);
    if (line === undefined) {
      void vscode.window.showInformationMessage("cpals: no violated assertion in this file.");
      return;
    }
    try {
      const trace = parseTrace(await serverCommandRequest("cpals.trace", [protocolUri(e.document.uri), line]));
      view.set(trace);
      tree.message = traceTitle(trace);
      await vscode.commands.executeCommand("setContext", "cpals.traceActive", true);
      await vscode.commands.executeCommand("cpals.counterexample.focus");
      await revealStep(view, tree, 0);
    } catch (err) {
      reportError("show counterexample", err);
    }
  });
  reg("cpals.revealTraceStep", (i: number) => revealStep(view, tree, i));
  reg("cpals.nextTraceStep", () => revealStep(view, tree, moveStep(view.current, 1, view.items.length)));
  reg("cpals.previousTraceStep", () => revealStep(view, tree, moveStep(view.current, -1, view.items.length)));
  reg("cpals.clearCounterexample", () => clearTrace(view, tree));
  reg("cpals.cancelVerification", async () => {
    const e = activeC();
    if (e) {
      await serverCommandRequest("cpals.cancel", [protocolUri(e.document.uri)]).catch((err) => reportError("cancel", err));
    }
  });
  reg("cpals.restartServer", async () => {
    await stopClient();
    await startClient();
  });

  context.subscriptions.push(
    vscode.languages.onDidChangeDiagnostics(() => updateStatus()),
    vscode.window.onDidChangeActiveTextEditor(() => updateStatus()),
    vscode.workspace.onDidChangeConfiguration(async (ev) => {
      if (!ev.affectsConfiguration("cpals")) {
        return;
      }
      if (needsRestart((s) => ev.affectsConfiguration(s))) {
        await stopClient();
        await startClient();
      } else if (client?.isRunning()) {
        await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { cpals: settingsForServer() } });
      }
    }),
  );
  await startClient();
}

export async function deactivate(): Promise<void> {
  await stopClient();
}
