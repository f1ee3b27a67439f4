'use strict';
// The pod commands' entry (bin/berth starts it for `berth run` and friends): runs the one-file
// bundle dist/cli/pod-main.bundle.cjs, compiled with V8's code cache (cached-bundle.cjs).
const { join } = require('node:path');
const { runBundle } = require('./cached-bundle.cjs');

runBundle(join(__dirname, '..', 'dist', 'cli', 'pod-main.bundle.cjs')).runPodCommandAndExit(
  process.argv.slice(2),
);
