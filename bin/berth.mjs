#!/usr/bin/env node
// The berth CLI's ES module entry, as bin/berth starts it for every command the pod command
// bundle (bin/berth-pod.cjs) does not serve. Built JavaScript lives in dist/ (scripts/setup runs
// the build).
const argv = process.argv.slice(2);
import('../dist/cli/main.js').then(
  (m) => m.runAndExit(argv),
  (err) => {
    process.stderr.write(`berth: cannot load dist/cli/main.js (run scripts/setup first): ${err.message}\n`);
    process.exitCode = 125;
  },
);
