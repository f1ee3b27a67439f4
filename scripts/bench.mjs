// `npm run bench NAME [args]` runs dist/bench/NAME.bench.js; with no NAME it lists the benchmarks.
// Benchmarks print medians and compare with the peer tool when it is installed.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

const available = existsSync('dist/bench')
  ? readdirSync('dist/bench')
      .filter((f) => f.endsWith('.bench.js'))
      .map((f) => f.replace(/\.bench\.js$/, ''))
  : [];
const [name, ...args] = process.argv.slice(2);
if (!name || !available.includes(name)) {
  console.error(
    `usage: npm run bench NAME [args]\nbenchmarks: ${available.join(', ') || '(none built: run scripts/setup)'}`,
  );
  process.exit(name ? 2 : 0);
}
const result = spawnSync(process.execPath, [`dist/bench/${name}.bench.js`, ...args], { stdio: 'inherit' });
process.exit(result.status ?? 1);
