// Bans bare catch-alls in the layers that read the BBS, the stores and the network (issue 18): a
// `.catch(() => undefined)` or an empty `catch {}` on a read turns an outage into "absent", and an
// unreachable BBS at the wrong moment then makes a fresh container look orphaned. Use `orAbsent`
// (src/core/absence.ts: only not_found is absence) or handle the error with a log. A catch-all that
// is truly fire-and-forget stays, with its reason on its line or the line above (for a catch block,
// also the first line of its body):
//     // catch-all: <why nothing is lost>
//
// Flagged: `.catch(() => C)` / `.catch((_e) => C)` where C is undefined, null, false, true, 0, '',
// [], {} or `void 0`; and `catch {` / `catch (e) {` whose body is empty (comments only) or only
// returns such a constant. Usage: node scripts/check-catch-alls.mjs [file or dir ...]
// (default: the layers below); exits 1 and lists each finding when there is one.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const checkedLayers = [
  'src/rep',
  'src/converger',
  'src/auctioneer',
  'src/executor',
  'src/bbs',
  'src/history',
  'src/api',
  'src/model',
  'src/router',
];

const constant = String.raw`(?:undefined|null|false|true|0|''|""|\[\s*\]|\{\s*\}|void 0)`;
const promiseCatchAll = new RegExp(
  String.raw`\.catch\(\s*(?:\(\s*\w*\s*\)|\w+)\s*=>\s*${constant}\s*\)`,
  'g',
);
const catchClause = /\bcatch\s*(?:\(\s*\w*\s*\))?\s*\{/g;
const constantReturn = new RegExp(String.raw`^(?:return(?:\s+${constant})?\s*;?)?$`);
const allowMarker = 'catch-all:';

/** The findings in one file's text: `{ line, message }`, lines counted from 1. */
export function findCatchAlls(text) {
  const lines = text.split('\n');
  const lineOf = (offset) => text.slice(0, offset).split('\n').length;
  const allowed = (line) =>
    (lines[line - 1] ?? '').includes(allowMarker) || (lines[line - 2] ?? '').includes(allowMarker);
  const findings = [];
  for (const match of text.matchAll(promiseCatchAll)) {
    const line = lineOf(match.index);
    if (!allowed(line)) findings.push({ line, message: `bare ${match[0].replace(/\s+/g, ' ')}` });
  }
  for (const match of text.matchAll(catchClause)) {
    const open = match.index + match[0].length;
    const close = matchingBrace(text, open);
    if (close === -1) continue;
    const body = stripComments(text.slice(open, close)).trim();
    if (!constantReturn.test(body)) continue;
    const line = lineOf(match.index);
    // A catch block may also carry its reason as the first line of its body.
    if (allowed(line) || (lines[line] ?? '').includes(allowMarker)) continue;
    findings.push({
      line,
      message: body === '' ? 'empty catch block' : `catch block that only says "${body}"`,
    });
  }
  return findings.sort((a, b) => a.line - b.line);
}

/** The offset of the `}` closing the block whose body starts at `from` (strings and comments skipped roughly). */
function matchingBrace(text, from) {
  let depth = 1;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === '/' && text[i + 1] === '/')
      i = text.indexOf('\n', i) === -1 ? text.length : text.indexOf('\n', i);
    else if (c === '/' && text[i + 1] === '*') i = text.indexOf('*/', i + 2) + 1;
    else if (c === "'" || c === '"' || c === '`') i = endOfString(text, i);
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

function endOfString(text, start) {
  const quote = text[start];
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === quote) return i;
  }
  return text.length;
}

function stripComments(code) {
  return code.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
}

function sourceFiles(path) {
  if (statSync(path).isFile()) return [path];
  return readdirSync(path, { withFileTypes: true }).flatMap((e) => {
    const full = join(path, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [full] : [];
  });
}

function main(args) {
  const root = join(fileURLToPath(import.meta.url), '..', '..');
  const targets = args.length > 0 ? args : checkedLayers.map((layer) => join(root, layer));
  let count = 0;
  for (const file of targets.flatMap(sourceFiles).sort()) {
    for (const { line, message } of findCatchAlls(readFileSync(file, 'utf8'))) {
      console.error(
        `${relative(process.cwd(), file)}:${line}: ${message} (use orAbsent or handle the error, or mark it "// ${allowMarker} <why>")`,
      );
      count++;
    }
  }
  if (count > 0) {
    console.error(`check-catch-alls: ${count} bare catch-all(s)`);
    process.exit(1);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
