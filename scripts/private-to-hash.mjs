// One-off codemod (kept for re-runs after merges): turns TypeScript `private` class members into
// ECMAScript `#` members, renaming every reference through the language service so nothing is
// missed. Constructor parameter properties are left alone (they cannot be `#`).
// Usage: node scripts/private-to-hash.mjs [path-prefix...]   (default: all of src, tests excluded)
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';

const root = process.cwd();
const prefixes = process.argv.slice(2).map((p) => resolve(root, p));
const configPath = ts.findConfigFile(root, ts.sys.fileExists, 'tsconfig.json');
const config = ts.getParsedCommandLineOfConfigFile(
  configPath,
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic() {} },
);
const files = new Map(
  config.fileNames.map((f) => [resolve(f), { version: 0, text: readFileSync(f, 'utf8') }]),
);
const host = {
  getScriptFileNames: () => [...files.keys()],
  getScriptVersion: (f) => String(files.get(resolve(f))?.version ?? 0),
  getScriptSnapshot: (f) => {
    const entry = files.get(resolve(f));
    const text = entry ? entry.text : ts.sys.readFile(f);
    return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
  },
  getCurrentDirectory: () => root,
  getCompilationSettings: () => config.options,
  getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
  fileExists: ts.sys.fileExists,
  readFile: ts.sys.readFile,
  readDirectory: ts.sys.readDirectory,
};
const service = ts.createLanguageService(host);
const wanted = (f) =>
  !/\.test\.ts$/.test(f) &&
  f.startsWith(join(root, 'src')) &&
  (prefixes.length === 0 || prefixes.some((p) => f.startsWith(p)));

function nextPrivate() {
  const program = service.getProgram();
  for (const [file] of files) {
    if (!wanted(file)) continue;
    const sf = program.getSourceFile(file);
    let found;
    const visit = (node) => {
      if (found) return;
      if (
        (ts.isPropertyDeclaration(node) ||
          ts.isMethodDeclaration(node) ||
          ts.isGetAccessor(node) ||
          ts.isSetAccessor(node)) &&
        node.modifiers?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword) &&
        ts.isIdentifier(node.name)
      ) {
        found = { file, node, sf };
        return;
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
    if (found) return found;
  }
  return undefined;
}

let count = 0;
for (;;) {
  const hit = nextPrivate();
  if (!hit) break;
  const { file, node, sf } = hit;
  const name = node.name.text;
  const locations =
    service.findRenameLocations(file, node.name.getStart(sf), false, false, {
      providePrefixAndSuffixTextForRename: false,
    }) ?? [];
  const edits = new Map();
  for (const loc of locations) {
    const list = edits.get(resolve(loc.fileName)) ?? [];
    list.push({ start: loc.textSpan.start, length: loc.textSpan.length, text: `#${name}` });
    edits.set(resolve(loc.fileName), list);
  }
  const mod = node.modifiers.find((m) => m.kind === ts.SyntaxKind.PrivateKeyword);
  const ownEdits = edits.get(file) ?? [];
  ownEdits.push({ start: mod.getStart(sf), length: mod.getEnd() - mod.getStart(sf) + 1, text: '' });
  edits.set(file, ownEdits);
  for (const [f, list] of edits) {
    const entry = files.get(f);
    let text = entry.text;
    for (const e of list.sort((a, b) => b.start - a.start))
      text = text.slice(0, e.start) + e.text + text.slice(e.start + e.length);
    entry.text = text;
    entry.version++;
  }
  count++;
}
for (const [f, entry] of files) if (entry.version > 0) writeFileSync(f, entry.text);
console.log(`converted ${count} private member(s)`);
