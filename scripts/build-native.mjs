// Builds berth's native addon (native/berth_native.c → build/Release/berth_native.node) with
// node-gyp, which npm puts on the PATH of every package script. Skipped when the addon is newer
// than its sources, so `npm run build` stays quick.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

const addon = 'build/Release/berth_native.node';
const sources = ['binding.gyp', 'native/berth_native.c'];
const built = existsSync(addon) ? statSync(addon).mtimeMs : 0;
if (sources.every((source) => statSync(source).mtimeMs <= built)) process.exit(0);
const result = spawnSync('node-gyp', ['rebuild', '--loglevel=warn'], { stdio: 'inherit' });
if (result.error?.code === 'ENOENT') {
  console.error("build-native: node-gyp is not on PATH; run `npm run build`, which puts npm's own there");
  process.exit(1);
}
if (result.status !== 0) {
  console.error(
    `build-native: node-gyp rebuild failed (${result.error?.message ?? `exit ${result.status}`}); ` +
      'it needs python3, make and a C compiler',
  );
  process.exit(1);
}
console.log(`build-native: ${addon}`);
