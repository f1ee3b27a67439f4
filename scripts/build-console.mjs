// Builds the console (src/console/ui, Preact + TSX) into dist/console/: a type check with its own
// tsconfig (DOM and JSX, which the server's tsconfig leaves out), then one esbuild bundle, then the
// page and stylesheet beside it. Everything is served by berth itself; nothing loads from a CDN.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { build } from 'esbuild';

execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'src/console/tsconfig.json'], {
  stdio: 'inherit',
});
// Cleared first: chunk names carry a content hash, and the server serves every file in the folder.
rmSync('dist/console/assets', { recursive: true, force: true });
mkdirSync('dist/console/assets', { recursive: true });
const result = await build({
  entryPoints: ['src/console/ui/main.tsx'],
  // Split so the terminal (xterm.js, loaded only when one opens) stays out of the first paint.
  outdir: 'dist/console/assets',
  entryNames: 'app',
  chunkNames: 'chunk-[hash]',
  splitting: true,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'linked',
  metafile: true,
  logLevel: 'warning',
});
// The chunks app.js imports statically are named in the page as modulepreload links, so the
// browser fetches them with app.js rather than after parsing it (one round trip less).
const entry = result.metafile.outputs['dist/console/assets/app.js'];
const preloads = entry.imports
  .filter((i) => i.kind === 'import-statement')
  .map((i) => `<link rel="modulepreload" href="/console/assets/${basename(i.path)}">`)
  .join('\n');
const page = readFileSync('src/console/ui/index.html', 'utf8').replace('<!-- modulepreload -->', preloads);
writeFileSync('dist/console/index.html', page);
copyFileSync('src/console/ui/console.css', 'dist/console/assets/console.css');
copyFileSync('node_modules/@xterm/xterm/css/xterm.css', 'dist/console/assets/xterm.css');
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(`build-console: dist/console/assets/app.js (${Math.round(bytes / 1024)} KiB with its map)`);
