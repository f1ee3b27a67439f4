// Runs every compiled test file (dist/**/*.test.js) with node's test runner.
// BERTH_TEST_FILTER=substring narrows the files; arguments are passed to `node --test`.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.test.js') ? [join(dir, e.name)] : [],
  );
}

const filter = process.env.BERTH_TEST_FILTER ?? '';
const files = walk('dist')
  .filter((f) => relative('dist', f).includes(filter))
  .sort();
if (files.length === 0) {
  console.error(`run-tests: no test files match "${filter}"`);
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ['--test', '--test-reporter=spec', '--test-concurrency=2', ...process.argv.slice(2), ...files],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
