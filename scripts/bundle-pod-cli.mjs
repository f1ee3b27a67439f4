// Bundles the hot paths after tsc and from its output (so TypeScript has one compiler): the pod
// commands (dist/cli/pod-main.js and everything it loads, lazily loaded modules included) into one
// CommonJS file, dist/cli/pod-main.bundle.cjs, for bin/berth; the detached stage-1 holder into
// dist/runtime/stage1-holder.bundle.cjs for PodRuntime.startDetached; and every other command
// (dist/cli/main.js) into dist/cli/main.bundle.mjs with a chunk per command module, for
// bin/berth.mjs. berth's native addon stays outside: it is loaded from build/ when first used.
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve as resolvePath } from 'node:path';
import { build } from 'esbuild';

// V8 code caches of earlier bundles (bin/cached-bundle.cjs names them after the bundle they fit),
// and any a killed writer left half made.
for (const dir of ['dist/cli', 'dist/runtime'])
  for (const name of readdirSync(dir).filter((n) => n.includes('.v8cache')))
    rmSync(`${dir}/${name}`, { force: true });

// import.meta does not exist in CommonJS. The modules on these paths that use it (to find the
// stage-1 holder beside them, and the native addon) are all in dist/runtime/: give them the URL
// of one of them there, which resolves their relative paths alike, and refuse any other user.
const importMetaUsers = ['dist/runtime/holder-start.js', 'dist/runtime/native-addon.js'];

// Node builtins that cost ~0.5–2 ms each to load and that most pod commands never call
// (child_process, crypto, fs/promises, http, https, net, streams, zlib): the bundle requires each on its first
// use instead of when the modules importing it are evaluated. Each becomes a small module whose
// properties are getters over the real one; the bundle reads an import's property at each call
// site, so nothing loads until something is called. Their property lists are read here, from the
// node that builds the bundle, the one that runs it.
const lazyBuiltins = [
  'node:child_process',
  'node:crypto',
  'node:fs/promises',
  'node:net',
  'node:stream',
  'node:stream/promises',
  'node:zlib',
  // http and https: core's JSON client and the registry client, for pulls from a registry only.
  'node:http',
  'node:https',
];
const requireBuiltin = createRequire(import.meta.url);
const lazyBuiltinsPlugin = {
  name: 'lazy-builtins',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) => {
      if (!lazyBuiltins.includes(args.path)) return undefined;
      // The stand-in's own require of the real module stays a plain require.
      if (args.namespace === 'lazy-builtin') return { path: args.path, external: true };
      return { path: args.path, namespace: 'lazy-builtin' };
    });
    b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (args) => {
      const names = Object.keys(requireBuiltin(args.path));
      return {
        loader: 'js',
        contents: [
          'let real;',
          `const load = () => (real ??= require(${JSON.stringify(args.path)}));`,
          `for (const name of ${JSON.stringify(names)})`,
          '  Object.defineProperty(exports, name, { enumerable: true, get: () => load()[name] });',
        ].join('\n'),
      };
    });
  },
};

/**
 * For the main CLI bundle (bin/berth-main.cjs): berth's own compiled modules are marked free of
 * side effects, so what a client command does not use of a layer's index (bbs/index.js re-exports
 * the SQL store with kysely, and TypeBox schemas) is left out rather than loaded at its start. The
 * command modules that need the server's world (`server`, `up`, `cell`, images, pods) stay
 * outside, as the ES modules beside the bundle, loaded by import() when such a command runs.
 */
const heavyCommandModules = [
  './server-command.js',
  './up-command.js',
  './cell-command.js',
  // The router (prom-client, CommonJS requiring node builtins).
  './router-command.js',
  './image-commands.js',
  './pod-commands.js',
  './volume-commands.js',
  './lrp-desire-command.js',
  // `logs` may read a local pod (the pod store), `exec` speaks WebSocket (ws).
  './logs-command.js',
  './exec-command.js',
  // tar-stream (CommonJS requiring node builtins), for `task outputs` alone.
  './task-output-extract.js',
];
const ownDist = `${resolvePath('dist')}/`;

/**
 * Every bundle's resolution of berth's own compiled modules: marked free of side effects (they
 * declare; nothing runs at load but the entry), so what a command does not use of a layer's index
 * is left out. core/index.js re-exports TypeBox's bounded schemas: without this the stage-1 holder,
 * which uses one error class of core, carried all of TypeBox (~210 KB of its ~225 KB), parsed and
 * run at every pod's start. Undefined for an import from outside berth's dist (esbuild's own rule).
 */
function resolveOwnModule(args) {
  if (!args.importer.startsWith(ownDist)) return undefined;
  return { path: resolvePath(args.resolveDir, args.path), sideEffects: false };
}

const clientBundlePlugin = {
  name: 'client-bundle',
  setup(b) {
    b.onResolve({ filter: /^\./ }, (args) => {
      if (args.kind === 'dynamic-import' && heavyCommandModules.includes(args.path))
        return { path: args.path, external: true };
      return resolveOwnModule(args);
    });
  },
};

/**
 * undici, which core's HTTP client loads by import() at the first request a long-lived process
 * sends (the CLI sends through node:http): left out of every bundle, loaded from node_modules if
 * a bundled command ever sends through it. Bundled, it would add its ~500 KB to each bundle.
 */
const undiciOutsidePlugin = {
  name: 'undici-outside',
  setup(b) {
    b.onResolve({ filter: /^undici$/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: args.path, external: true } : undefined,
    );
  },
};

/** For the pod commands' and the holder's bundles: berth's own modules, as resolveOwnModule says. */
const ownModulesPurePlugin = {
  name: 'own-modules-pure',
  setup(b) {
    b.onResolve({ filter: /^\./ }, resolveOwnModule);
  },
};

async function bundle(entry, outfile, runtimeDirFromBundle) {
  const result = await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    banner: {
      js: `const __runtimeModuleUrl = require('node:url').pathToFileURL(require('node:path').join(__dirname, ${runtimeDirFromBundle}, 'holder-start.js')).href;`,
    },
    define: { 'import.meta.url': '__runtimeModuleUrl' },
    metafile: true,
    // Without comments and indentation the file is ~30% smaller: quicker to read and to check
    // against its code cache. Names stay, so a stack trace still reads.
    minifyWhitespace: true,
    // Non-ASCII characters in strings and regexps come out escaped (esbuild's default, stated):
    // with the comments gone the file is ASCII, which bin/berth-pod.cjs relies on.
    charset: 'ascii',
    plugins: [lazyBuiltinsPlugin, ownModulesPurePlugin, undiciOutsidePlugin],
    logLevel: 'warning',
    // Only the define above may stand in for import.meta: a stray use is a build error, below.
    logOverride: { 'empty-import-meta': 'silent' },
  });
  if (readFileSync(outfile).some((byte) => byte > 0x7f)) {
    console.error(`bundle-pod-cli: ${outfile} is not ASCII, which bin/berth-pod.cjs reads it as`);
    process.exit(1);
  }
  // What is in the output: the inputs tree shaking left out are no cost at run time.
  const bundled = Object.values(result.metafile.outputs)[0]?.inputs ?? {};
  const inputs = Object.keys(bundled).filter(
    (i) => !i.startsWith('lazy-builtin:') && (bundled[i]?.bytesInOutput ?? 0) > 0,
  );
  const strays = inputs.filter(
    (input) => !importMetaUsers.includes(input) && readFileSync(input, 'utf8').includes('import.meta'),
  );
  if (strays.length > 0) {
    console.error(`bundle-pod-cli: ${strays.join(', ')} use import.meta, which the bundle cannot give them`);
    process.exit(1);
  }
  const packages = [
    ...new Set(inputs.filter((i) => i.startsWith('node_modules/')).map((i) => i.split('/')[1])),
  ];
  console.log(
    `bundle-pod-cli: ${outfile} from ${inputs.length} modules` +
      (packages.length > 0 ? ` (packages: ${packages.join(', ')})` : ''),
  );
}

await bundle('dist/cli/pod-main.js', 'dist/cli/pod-main.bundle.cjs', "'..', 'runtime'");
await bundle('dist/runtime/stage1-holder-main.js', 'dist/runtime/stage1-holder.bundle.cjs', "'.'");
// Every other command (bin/berth.mjs): ES modules with code splitting, so each command's handler
// is its own chunk and a command loads only its chunk and what it shares; written beside the
// modules they come from (dist/cli/), where import.meta.url and the external import()s resolve
// as they do from tsc's output.
for (const name of readdirSync('dist/cli').filter(
  (n) => n.endsWith('.bundle.mjs') || n.endsWith('.chunk.mjs'),
))
  rmSync(`dist/cli/${name}`, { force: true });
const client = await build({
  entryPoints: { 'main.bundle': 'dist/cli/main.js' },
  outdir: 'dist/cli',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outExtension: { '.js': '.mjs' },
  chunkNames: '[name]-[hash].chunk',
  metafile: true,
  minifyWhitespace: true,
  plugins: [clientBundlePlugin, undiciOutsidePlugin],
  logLevel: 'warning',
});
const strays = Object.keys(client.metafile.inputs).filter(
  (input) =>
    input.startsWith('dist/') &&
    !input.startsWith('dist/cli/') &&
    readFileSync(input, 'utf8').includes('import.meta'),
);
if (strays.length > 0) {
  console.error(
    `bundle-pod-cli: ${strays.join(', ')} use import.meta, which is another module's in dist/cli/`,
  );
  process.exit(1);
}
console.log(
  `bundle-pod-cli: dist/cli/main.bundle.mjs and ${Object.keys(client.metafile.outputs).length - 1} chunks from ${Object.keys(client.metafile.inputs).length} modules`,
);
