// Checks a packaged .vsix (a zip) without VS Code: the manifest's commands, settings and view, the bundled extension, and nothing that should not ship.

import * as fs from "node:fs";
import * as zlib from "node:zlib";

/** The entries of a zip file: name to contents (stored or deflated). */
export function readZip(buf: Buffer): Map<string, Buffer> {
  // End of central directory: signature 0x06054b50, within the last 64 KiB + 22 bytes.
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65557); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) {
    throw new Error("not a zip file");
  }
  const count = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  const out = new Map<string, Buffer>();
  for (let n = 0; n < count; n++) {
    if (buf.readUInt32LE(p) !== 0x02014b50) {
      throw new Error(`bad central directory entry at ${p}`);
    }
    const method = buf.readUInt16LE(p + 10);
    const size = buf.readUInt32LE(p + 20);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    const local = buf.readUInt32LE(p + 42);
    const name = buf.toString("utf8", p + 46, p + 46 + nameLen);
    const dataStart = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const raw = buf.subarray(dataStart, dataStart + size);
    out.set(name, method === 0 ? Buffer.from(raw) : zlib.inflateRawSync(raw));
    p += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

/** The problems of a packaged extension; empty when it is fine. */
export function checkVsix(entries: Map<string, Buffer>): string[] {
  const problems: string[] = [];
  const manifest = entries.get("extension/package.json");
  if (!manifest) {
    return ["extension/package.json is missing"];
  }
  const pkg = JSON.parse(manifest.toString("utf8"));
  const commands = new Set<string>((pkg.contributes?.commands ?? []).map((c: { command: string }) => c.command));
  for (const c of ["cpals.verify", "cpals.verifyFunctionAtCursor", "cpals.showCounterexample", "cpals.nextTraceStep", "cpals.previousTraceStep"]) {
    if (!commands.has(c)) {
      problems.push(`command ${c} is not contributed`);
    }
  }
  const settings = Object.keys(pkg.contributes?.configuration?.properties ?? {});
  for (const s of ["cpals.path", "cpals.analysis", "cpals.trigger", "cpals.debounceMs", "cpals.timeoutSeconds"]) {
    if (!settings.includes(s)) {
      problems.push(`setting ${s} is not contributed`);
    }
  }
  // The view is in a panel container of its own (room for the steps), with its icon packaged.
  const panel = (pkg.contributes?.viewsContainers?.panel ?? []).find((c: { id: string }) => c.id === "cpals");
  if (!panel || !(pkg.contributes?.views?.cpals ?? []).some((v: { id: string }) => v.id === "cpals.counterexample")) {
    problems.push("the counterexample view is not contributed (in the panel container `cpals`)");
  } else if (!entries.has(`extension/${panel.icon}`)) {
    problems.push(`extension/${panel.icon} (the view container's icon) is missing`);
  }
  const main = `extension/${String(pkg.main).replace(/^\.\//, "")}`;
  const bundle = entries.get(main);
  if (!bundle) {
    problems.push(`${main} (the extension's main) is missing`);
  } else {
    const js = bundle.toString("utf8");
    for (const needle of ["cpals/jobStarted", "cpals.trace", "vscode-languageclient"]) {
      if (!js.includes(needle)) {
        problems.push(`${main} does not contain ${needle} (not bundled?)`);
      }
    }
  }
  for (const name of entries.keys()) {
    if (/^extension\/(node_modules|src|out|test)\//.test(name) || name.endsWith(".ts") && !name.endsWith(".d.ts")) {
      problems.push(`${name} should not be packaged`);
    }
  }
  return problems;
}

if (require.main === module) {
  const file = process.argv[2] ?? "cpals.vsix";
  const entries = readZip(fs.readFileSync(file));
  const problems = checkVsix(entries);
  const pkg = JSON.parse(entries.get("extension/package.json")?.toString("utf8") ?? "{}");
  const commands = (pkg.contributes?.commands ?? []).map((c: { command: string; title: string }) => `${c.command} (${c.title})`);
  console.log(`${file}: ${entries.size} files, ${fs.statSync(file).size} bytes; commands: ${commands.join(", ")}`);
  if (problems.length > 0) {
    console.error(problems.map((p) => `  ${p}`).join("\n"));
    process.exit(1);
  }
  console.log(`${file}: ok`);
}
