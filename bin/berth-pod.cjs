'use strict';
// The pod commands' entry (bin/berth starts it for `berth run` and friends): runs the one-file
// bundle dist/cli/pod-main.bundle.cjs, compiled with V8's code cache.
//
// Compiling the 200 kB bundle, and then each function the command calls, is ~7 ms of `berth run`
// on the development machine; with a code cache V8 deserializes what an earlier run compiled
// instead. The cache sits beside the bundle, named after the bundle's size and mtime, so a new
// build never meets an old cache (V8 itself rejects one of another node version or other flags).
// A command that finds no cache it can use leaves one when it exits; a data dir that cannot be
// written (an install owned by someone else) only means no cache.
const { readFileSync, renameSync, statSync, writeFileSync } = require('node:fs');
const { createRequire, wrap } = require('node:module');
const { join } = require('node:path');
const { Script } = require('node:vm');

const dist = join(__dirname, '..', 'dist', 'cli');
const bundle = join(dist, 'pod-main.bundle.cjs');
const { size, mtimeMs } = statSync(bundle);
const cacheFile = `${bundle}.${size}-${Math.trunc(mtimeMs)}.v8cache`;
let cachedData;
try {
  cachedData = readFileSync(cacheFile);
} catch {
  // No cache yet: this run makes one.
}
// The bundle is ASCII (scripts/bundle-pod-cli.mjs checks): read as latin1, it becomes a string
// without UTF-8 decoding, ~0.5 ms sooner.
const script = new Script(wrap(readFileSync(bundle, 'latin1')), { filename: bundle, cachedData });
if (cachedData === undefined || script.cachedDataRejected) {
  process.once('exit', () => {
    try {
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      writeFileSync(tmp, script.createCachedData());
      renameSync(tmp, cacheFile);
    } catch {
      // Best effort: the next run compiles again.
    }
  });
}
const module_ = { exports: {} };
script.runInThisContext()(module_.exports, createRequire(bundle), module_, bundle, dist);
module_.exports.runPodCommandAndExit(process.argv.slice(2));
