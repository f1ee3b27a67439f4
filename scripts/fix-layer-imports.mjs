// Holds the layer rule of DESIGN.md: a module of one layer (src/<layer>/) imports another layer only
// through that layer's index (src/<layer>/index.ts, or a sub-layer's index such as
// src/runtime/image/index.ts), and every index names what it exports instead of `export *`.
//
// `node scripts/fix-layer-imports.mjs` (re-runnable, idempotent):
//   1. rewrites every cross-layer deep import or re-export in product code (tests, src/testing and
//      src/bench are exempt, as in .dependency-cruiser.cjs) to the index of the imported layer,
//      keeping the imported names; a name the index does not export yet is added to it;
//   2. regenerates each src/**/index.ts: `export * from './m.js'` becomes `export { a, b } from
//      './m.js'` and `export type { T } from './m.js'`, listed from the module's exports.
// Each changed file is passed through `biome check --write` (import order, line breaks); then run
// `npm run deps`.
// `--check` changes nothing and exits 1 when a file would change (for CI).
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = process.cwd();
const srcDir = join(root, 'src');
const checkOnly = process.argv.includes('--check');

const exempt = (file) => /\.test\.ts$/.test(file) || /^src\/(testing|bench)\//.test(rel(file));
const rel = (file) => relative(root, file).split('\\').join('/');
const layerOf = (file) => rel(file).split('/')[1];
const isIndex = (file) => /^src\/[^/]+\/(?:[^/]+\/)?index\.ts$/.test(rel(file));
// The start-up entries .dependency-cruiser.cjs lets `berth run`'s path import directly: a value
// import of one stays as written (a type-only import still goes through the index: it costs nothing).
const layerRule = createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs')).forbidden.find(
  (rule) => rule.name === 'other-layers-only-through-their-index',
);
const startupEntries = layerRule.to.pathNot
  .filter((pattern) => !pattern.includes('$1') && !pattern.includes('index'))
  .map((pattern) => new RegExp(pattern));
const isStartupEntry = (file) => startupEntries.some((pattern) => pattern.test(rel(file)));

const configPath = ts.findConfigFile(root, ts.sys.fileExists, 'tsconfig.json');
const config = ts.getParsedCommandLineOfConfigFile(
  configPath,
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
);
const program = ts.createProgram(config.fileNames, config.options);
const checker = program.getTypeChecker();
const sources = program.getSourceFiles().filter((sf) => sf.fileName.startsWith(srcDir));
const byName = new Map(sources.map((sf) => [resolve(sf.fileName), sf]));

/** The file a relative specifier names, or undefined for packages and node: modules. */
function target(from, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const file = resolve(dirname(from), specifier.replace(/\.js$/, '.ts'));
  return byName.has(file) ? file : undefined;
}

function specifierTo(from, file) {
  let spec = relative(dirname(from), file).split('\\').join('/').replace(/\.ts$/, '.js');
  if (!spec.startsWith('.')) spec = `./${spec}`;
  return spec;
}

/** The index that should carry `file` for importers outside its layer: its sub-layer's, else its layer's. */
function entryOf(file) {
  const parts = rel(file).split('/');
  if (parts.length > 3) {
    const subIndex = join(root, parts[0], parts[1], parts[2], 'index.ts');
    if (byName.has(subIndex)) return subIndex;
  }
  return join(root, parts[0], parts[1], 'index.ts');
}

/** Exported names of a module: [name, isTypeOnly][]. */
function exportsOf(file) {
  const sf = byName.get(file);
  const symbol = sf && checker.getSymbolAtLocation(sf);
  if (!symbol) return [];
  return checker
    .getExportsOfModule(symbol)
    .filter((s) => s.escapedName !== 'default')
    .map((s) => {
      const typeOnlyAlias = (s.declarations ?? []).some(
        (d) => ts.isExportSpecifier(d) && (d.isTypeOnly || d.parent.parent.isTypeOnly),
      );
      const resolved = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
      return [s.name, typeOnlyAlias || !(resolved.flags & ts.SymbolFlags.Value)];
    })
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

// ---- 1. Deep imports → index imports; note the names each index must carry.
/** index file → module file → Set of names its importers need. */
const needed = new Map();
const edits = new Map(); // file → [{ start, end, text }]
function need(index, module, name) {
  if (!needed.has(index)) needed.set(index, new Map());
  const modules = needed.get(index);
  if (!modules.has(module)) modules.set(module, new Set());
  modules.get(module).add(name);
}
function edit(file, node, text) {
  if (!edits.has(file)) edits.set(file, []);
  edits.get(file).push({ start: node.getStart(), end: node.getEnd(), text });
}
const unhandled = [];

for (const sf of sources) {
  const file = resolve(sf.fileName);
  if (exempt(file) || isIndex(file)) continue;
  const visit = (node) => {
    let specNode;
    let names = [];
    let typeOnly = false;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      specNode = node.moduleSpecifier;
      const clause = ts.isImportDeclaration(node) ? node.importClause : undefined;
      const bindings = ts.isImportDeclaration(node) ? clause?.namedBindings : node.exportClause;
      if (bindings && (ts.isNamedImports(bindings) || ts.isNamedExports(bindings))) {
        names = bindings.elements.map((e) => (e.propertyName ?? e.name).text);
        typeOnly =
          Boolean(clause?.isTypeOnly) ||
          (ts.isExportDeclaration(node) && node.isTypeOnly) ||
          bindings.elements.every((e) => e.isTypeOnly);
      } else if (ts.isImportDeclaration(node) && (!clause || clause.name || bindings)) {
        names = undefined; // side-effect, default or namespace import: left for a person
      } else if (ts.isExportDeclaration(node) && !bindings) {
        names = undefined; // export * from a deep module
      }
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments.length === 1 &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      specNode = node.arguments[0];
      names = null; // a dynamic import: which names it takes is not in the syntax
    }
    if (specNode) {
      const to = target(file, specNode.text);
      if (to && layerOf(to) !== layerOf(file) && !isIndex(to) && (typeOnly || !isStartupEntry(to))) {
        const index = entryOf(to);
        if (names === undefined) unhandled.push(`${rel(file)}: ${specNode.text}`);
        else {
          for (const name of names ?? exportsOf(to).map(([n]) => n)) need(index, to, name);
          edit(file, specNode, `'${specifierTo(file, index)}'`);
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

// ---- 2. Each index: named exports, listed from the modules' exports, plus what step 1 needs.
const byFirst = ([a], [b]) => (a < b ? -1 : a > b ? 1 : 0);

function renderExports(index, module, names) {
  const spec = specifierTo(index, module);
  const values = names.filter(([, type]) => !type).map(([n]) => n);
  const types = names.filter(([, type]) => type).map(([n]) => n);
  if (values.length === 0 && types.length === 0) return [];
  if (values.length === 0) return [`export type { ${types.join(', ')} } from '${spec}';`];
  return [`export { ${[...values, ...types.map((t) => `type ${t}`)].join(', ')} } from '${spec}';`];
}

for (const sf of sources) {
  const index = resolve(sf.fileName);
  if (!isIndex(index)) continue;
  const extra = needed.get(index) ?? new Map();
  /** In file order: verbatim text, or a module whose named exports are rendered at the end. */
  const items = [];
  /** module → name → type-only. */
  const listed = new Map();
  const taken = new Set();
  const add = (module, name, type) => {
    if (!listed.has(module)) {
      listed.set(module, new Map());
      items.push({ module });
    }
    const names = listed.get(module);
    names.set(name, (names.get(name) ?? true) && type);
  };
  for (const statement of sf.statements) {
    const lead = sf.getFullText().slice(statement.getFullStart(), statement.getStart()).trim();
    // The file's opening comment stays a header (a blank line after it), so import sorting keeps it first.
    if (lead) items.push({ text: statement === sf.statements[0] ? `${lead}\n` : lead });
    const module =
      ts.isExportDeclaration(statement) && statement.moduleSpecifier
        ? target(index, statement.moduleSpecifier.text)
        : undefined;
    const clause = module ? statement.exportClause : undefined;
    const renames = clause && (!ts.isNamedExports(clause) || clause.elements.some((e) => e.propertyName));
    if (!module || renames) {
      // Not a re-export of a module of this layer, or one that renames: kept as written.
      items.push({ text: statement.getText(sf) });
      if (renames && ts.isNamedExports(clause)) for (const e of clause.elements) taken.add(e.name.text);
      continue;
    }
    const all = new Map(exportsOf(module));
    if (!clause) for (const [name, type] of all) add(module, name, type);
    else {
      for (const e of clause.elements) {
        add(module, e.name.text, statement.isTypeOnly || e.isTypeOnly || all.get(e.name.text) === true);
      }
    }
  }
  for (const [module, names] of extra) {
    const all = new Map(exportsOf(module));
    for (const name of names) add(module, name, all.get(name) === true);
  }
  const out = [];
  for (const item of items) {
    if (item.text !== undefined) {
      out.push(item.text);
      continue;
    }
    // A name two modules export (one re-exporting the other's type) is listed once, first wins.
    const names = [...listed.get(item.module)].filter(([n]) => !taken.has(n)).sort(byFirst);
    for (const [n] of names) taken.add(n);
    out.push(...renderExports(index, item.module, names));
  }
  const text = `${out.join('\n')}\n`;
  if (text !== sf.getFullText()) {
    if (!edits.has(index)) edits.set(index, []);
    edits.get(index).push({ start: 0, end: sf.getFullText().length, text });
  }
}

// ---- Write (or, with --check, report), each file as biome formats it, so a second run changes nothing.
/** The file as `biome check --write` leaves it (import order, line breaks), or as is if biome refuses. */
function formatted(file, text) {
  const biome = join(root, 'node_modules/.bin/biome');
  const run = spawnSync(biome, ['check', '--write', `--stdin-file-path=${rel(file)}`], {
    input: text,
    encoding: 'utf8',
  });
  return run.status === 0 && run.stdout ? run.stdout : text;
}

let changed = 0;
for (const [file, list] of edits) {
  const original = readFileSync(file, 'utf8');
  let text = original;
  for (const e of [...list].sort((a, b) => b.start - a.start)) {
    text = text.slice(0, e.start) + e.text + text.slice(e.end);
  }
  text = formatted(file, text);
  if (text === original) continue;
  changed++;
  if (checkOnly) console.log(`would change ${rel(file)}`);
  else writeFileSync(file, text);
}
for (const line of unhandled) console.error(`left as is (not a named import): ${line}`);
console.log(`${checkOnly ? 'would change' : 'changed'} ${changed} file(s)`);
if (checkOnly && changed > 0) process.exit(1);
