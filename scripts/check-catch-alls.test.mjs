// The catch-all check on a fixture: each line marked `// FLAG` must be reported, and nothing else.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { findCatchAlls } from './check-catch-alls.mjs';

const fixture = `
async function reads(store) {
  const a = await store.get('a').catch(() => undefined); // FLAG
  const b = await store.get('b').catch(() => null); // FLAG
  const c = await store.get('c').catch((_err) => []); // FLAG
  await store.put('d').catch(() => {}); // FLAG
  await store.put('e').catch(() => false); // FLAG
  try {
    await store.get('f');
  } catch {} // FLAG
  try {
    await store.get('g');
  } catch (err) { // FLAG
    // an explanation is not a handling
  }
  try {
    return await store.get('h');
  } catch { // FLAG
    return undefined;
  }
  // catch-all: cancelling a body that is not ours; nothing depends on it
  await body.cancel().catch(() => {});
  await release().catch(() => {}); // catch-all: the lease expires by itself
  try {
    await store.get('k');
  } catch {
    // catch-all: a read of our own scratch file; absent and unreadable mean the same here
  }
  try {
    await store.get('i');
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  try {
    JSON.parse(text);
  } catch {
    return fallback('{ not a constant }');
  }
  const logged = await store.get('j').catch((err) => log(err));
  return [a, b, c, logged];
}
`;

describe('check-catch-alls', () => {
  it('flags each bare catch-all of the fixture and nothing else', () => {
    const lines = fixture.split('\n');
    const expected = lines.flatMap((line, i) => (line.includes('// FLAG') ? [i + 1] : []));
    assert.equal(expected.length, 8);
    assert.deepEqual(
      findCatchAlls(fixture).map((f) => f.line),
      expected,
    );
  });

  it('exits 1 naming file and line on a finding, 0 on a clean file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-catch-alls-'));
    try {
      const script = fileURLToPath(new URL('./check-catch-alls.mjs', import.meta.url));
      writeFileSync(join(dir, 'bad.ts'), 'x.read().catch(() => null);\n');
      writeFileSync(join(dir, 'bad.test.ts'), 'x.read().catch(() => null);\n');
      const bad = spawnSync(process.execPath, [script, dir], { encoding: 'utf8' });
      assert.equal(bad.status, 1);
      assert.match(bad.stderr, /bad\.ts:1: bare \.catch\(\(\) => null\)/);
      assert.doesNotMatch(bad.stderr, /bad\.test\.ts/);
      writeFileSync(join(dir, 'bad.ts'), 'x.read().catch((err) => log(err));\n');
      assert.equal(spawnSync(process.execPath, [script, dir]).status, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
