import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runBerth } from '../testing/berth-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-server-flags-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('berth server pacing flags', () => {
  const cases: [string, string][] = [
    ['max-heartbeats-per-second', '0'],
    ['max-heartbeats-per-second', '-5'],
    ['max-cell-passes-per-second', 'fast'],
    ['max-cell-passes-per-second', '1e9999'],
  ];
  for (const [flag, value] of cases) {
    it(`--${flag} ${value} is refused naming the flag, before a database is made`, async () => {
      const data = join(dir, `${flag}-${value}`);
      const r = await runBerth(['server', '--listen', '127.0.0.1:0', '--dir', data, `--${flag}=${value}`]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, new RegExp(`--${flag} must be a positive number`));
      assert.deepEqual(readdirSync(data), []);
    });
  }
});

describe('berth server --db-pool-size', () => {
  for (const value of ['0', '-1', 'many']) {
    it(`--db-pool-size ${value} is refused naming the flag, before a database is made`, async () => {
      const data = join(dir, `pool-${value}`);
      const r = await runBerth([
        'server',
        '--listen',
        '127.0.0.1:0',
        '--dir',
        data,
        `--db-pool-size=${value}`,
      ]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /--db-pool-size must be/);
      assert.deepEqual(readdirSync(data), []);
    });
  }
});
