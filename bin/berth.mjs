#!/usr/bin/env node
// The berth CLI's ES module entry, as bin/berth starts it for every command the pod command
// bundle (bin/berth-pod.cjs) does not serve. Built JavaScript lives in dist/ (scripts/setup runs
// the build).
//
// `npm run build` also bundles dist/cli/main.js into dist/cli/main.bundle.mjs, a chunk per command
// module with only what each uses (scripts/bundle-pod-cli.mjs): `berth lrp list` loads a few
// small files instead of ~100 modules with kysely and TypeBox. A bundle older than tsc's output (a
// build that stopped at tsc) is not used: the ES modules are then the newer truth.
import { statSync } from 'node:fs';

const argv = process.argv.slice(2);
const dist = new URL('../dist/cli/', import.meta.url);
const mtime = (name) => statSync(new URL(name, dist), { throwIfNoEntry: false })?.mtimeMs ?? -1;
const bundled = mtime('main.bundle.mjs') >= mtime('main.js') && mtime('main.js') !== -1;
import(new URL(bundled ? 'main.bundle.mjs' : 'main.js', dist).href).then(
  (m) => m.runAndExit(argv),
  (err) => {
    process.stderr.write(`berth: cannot load dist/cli/main.js (run scripts/setup first): ${err.message}\n`);
    process.exitCode = 125;
  },
);
