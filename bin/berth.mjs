#!/usr/bin/env node
// The berth CLI, as bin/berth starts it. Built JavaScript lives in dist/ (scripts/setup runs the build).
//
// The pod commands, `berth run` first, load as one CommonJS bundle (dist/cli/pod-main.bundle.cjs):
// ~20 ms sooner than their ES modules. A bundle older than tsc's output (a build that stopped at
// tsc) is not used: the ES modules are then the newer truth.
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';

const argv = process.argv.slice(2);
// The commands of src/cli/pod-commands.ts (src/cli/launcher.test.ts checks the two agree).
const podCommands = new Set(['prepare', 'run', 'run-prepared', 'status', 'list', 'logs', 'enter', 'stop', 'rm', 'gc']);
const bundle = new URL('../dist/cli/pod-main.bundle.cjs', import.meta.url);

function bundleIsCurrent() {
  try {
    return statSync(bundle).mtimeMs >= statSync(new URL('../dist/cli/pod-main.js', import.meta.url)).mtimeMs;
  } catch {
    return false;
  }
}

if (podCommands.has(argv[0] ?? '') && bundleIsCurrent()) {
  createRequire(import.meta.url)(bundle.pathname).runPodCommandAndExit(argv);
} else {
  import('../dist/cli/main.js').then(
    (m) => m.runAndExit(argv),
    (err) => {
      process.stderr.write(`berth: cannot load dist/cli/main.js (run scripts/setup first): ${err.message}\n`);
      process.exitCode = 125;
    },
  );
}
