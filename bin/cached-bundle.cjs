'use strict';
// Runs a one-file CommonJS bundle of berth's (`npm run build` makes them) compiled with V8's code
// cache: bin/berth-pod.cjs for the pod commands, bin/berth-holder.cjs for the stage-1 holder.
//
// Compiling a bundle, and then each function the process calls, is ~7 ms of `berth run` and
// ~10 ms of a holder's start on the development machine; with a code cache V8 deserializes what
// an earlier run compiled instead. The cache sits beside the bundle, named after the bundle's
// size and mtime, so a new build never meets an old cache (V8 itself rejects one of another node
// version or other flags; scripts/bundle-pod-cli.mjs removes stale ones). A process that finds no
// cache it can use leaves one: when it exits, or `cacheAfterMs` after its start for a process
// that may live for days (the holder of a long-running app), with what it compiled by then. A
// dir that cannot be written (an install owned by someone else) only means no cache.
const { readFileSync, renameSync, statSync, writeFileSync } = require('node:fs');
const { createRequire, wrap } = require('node:module');
const { dirname } = require('node:path');
const { Script } = require('node:vm');

/** Evaluates `bundle` (an absolute path) and returns its module.exports. */
exports.runBundle = function runBundle(bundle, options) {
  const { size, mtimeMs } = statSync(bundle);
  const cacheFile = `${bundle}.${size}-${Math.trunc(mtimeMs)}.v8cache`;
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    // No cache yet: this run makes one.
  }
  // The bundles are ASCII (scripts/bundle-pod-cli.mjs checks): read as latin1, a bundle becomes a
  // string without UTF-8 decoding, ~0.5 ms sooner.
  const script = new Script(wrap(readFileSync(bundle, 'latin1')), { filename: bundle, cachedData });
  if (cachedData === undefined || script.cachedDataRejected) {
    let written = false;
    const write = () => {
      if (written) return;
      written = true;
      try {
        const tmp = `${cacheFile}.${process.pid}.tmp`;
        writeFileSync(tmp, script.createCachedData());
        renameSync(tmp, cacheFile);
      } catch {
        // Best effort: the next run compiles again.
      }
    };
    process.once('exit', write);
    if (options && options.cacheAfterMs !== undefined) setTimeout(write, options.cacheAfterMs).unref();
  }
  const module_ = { exports: {} };
  script.runInThisContext()(module_.exports, createRequire(bundle), module_, bundle, dirname(bundle));
  return module_.exports;
};
