import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The layer rule of .dependency-cruiser.cjs, run on a tiny tree: another layer is imported through
 * its index only; a test may reach inside.
 */
describe('layer rules (.dependency-cruiser.cjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-layer-rules-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'nodenext', strict: true } }),
    'src/lower/inner.ts': 'export const inner = 1;\n',
    'src/lower/index.ts': "export { inner } from './inner.js';\n",
    'src/lower/part/index.ts': "export { inner } from '../inner.js';\n",
    'src/upper/through-index.ts': "import { inner } from '../lower/index.js';\nexport const a = inner;\n",
    'src/upper/through-sub-index.ts':
      "import { inner } from '../lower/part/index.js';\nexport const b = inner;\n",
    'src/upper/deep.ts': "import { inner } from '../lower/inner.js';\nexport const c = inner;\n",
    'src/upper/deep.test.ts': "import { inner } from '../lower/inner.js';\nexport const d = inner;\n",
    'src/upper/sibling.ts': "import { a } from './through-index.js';\nexport const e = a;\n",
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }

  it('refuses a deep import of another layer and allows its index, a sub-layer index and tests', () => {
    const run = spawnSync(
      join(repo, 'node_modules/.bin/depcruise'),
      ['src', '--config', join(repo, '.dependency-cruiser.cjs'), '--output-type', 'json'],
      { cwd: dir, encoding: 'utf8' },
    );
    const result = JSON.parse(run.stdout) as {
      summary: { violations: { from: string; to: string; rule: { name: string } }[] };
    };
    const found = result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
    assert.deepEqual(found, [
      'other-layers-only-through-their-index: src/upper/deep.ts → src/lower/inner.ts',
    ]);
  });
});
