import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { BerthError } from '../core/index.js';
import { modelRead, SqlModelTxnRunner } from './sql-model-txn-runner.js';
import { SqlSystemStore } from './sql-system-store.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The TypeScript sources (tests run from dist/, the sources sit at the same place under src/). */
const srcRoot = join(here, '..', '..', 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe("a system's phase has one writer, and it asserts the table (issue 19)", () => {
  it('no source but writeSystemPhase inserts, updates or deletes model_systems', () => {
    const writers: string[] = [];
    const write =
      /(insertInto|updateTable|deleteFrom)\(\s*'model_systems'\s*\)|(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+model_systems\b/g;
    for (const file of sources(srcRoot)) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(write)) {
        const before = text.slice(0, m.index);
        const fn = [...before.matchAll(/\n(?:export )?(?:async )?function (\w+)/g)].at(-1)?.[1];
        writers.push(`${relative(srcRoot, file)}:${fn ?? '?'}`);
      }
    }
    assert.ok(writers.length > 0, 'the scan finds the one writer');
    assert.deepEqual(
      [...new Set(writers)],
      ['model/sql-system-rows.ts:writeSystemPhase'],
      'every phase write goes through writeSystemPhase (model/sql-system-rows.ts)',
    );
  });
});

describe('the store moves phases only along the table (SQLite)', () => {
  let dir: string;
  let store: SqlBbsStore;
  let systems: SqlSystemStore;
  let n = 0;
  const nextId = () => `d-${++n}`;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-phase-'));
    store = await openBbsStore(join(dir, 'bbs.sqlite3'));
    await SqlModelTxnRunner.open(store.backend);
    systems = new SqlSystemStore(store.backend);
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function deploy(system: string) {
    const a = await systems.acceptAction({
      id: nextId(),
      system,
      action: { kind: 'deploy', path: '/' },
      owner: 'me',
    });
    assert.equal(a.state, 'accepted');
    assert.ok(await systems.startAction(a.id, 'me'));
    return a;
  }
  async function teardown(system: string) {
    const a = await systems.acceptAction({ id: nextId(), system, action: { kind: 'teardown' }, owner: 'me' });
    assert.ok(await systems.startAction(a.id, 'me'));
    return a;
  }
  const phase = async (system: string) => {
    const s = await systems.getSystem(system);
    return s ? [s.phase, s.reason] : ['gone', ''];
  };

  it('a first deploy that fails: pending → failed with the reason; a redeploy starts it over (failed → pending)', async () => {
    const first = await deploy('s1');
    assert.deepEqual(await phase('s1'), ['pending', '']);
    await systems.finishAction(
      first.id,
      'me',
      'failed',
      '/web: instance 0 cannot be placed: Cannot find image "x"',
    );
    assert.deepEqual(await phase('s1'), [
      'failed',
      '/web: instance 0 cannot be placed: Cannot find image "x"',
    ]);
    const again = await deploy('s1');
    assert.deepEqual(await phase('s1'), ['pending', '']);
    await systems.finishAction(again.id, 'me', 'succeeded', '');
    assert.deepEqual(await phase('s1'), ['active', '']);
  });

  it('a redeploy of an active system that fails leaves it active with a degraded condition; the next success clears it', async () => {
    const redeploy = await deploy('s1');
    assert.deepEqual(await phase('s1'), ['active', '']);
    await systems.finishAction(redeploy.id, 'me', 'failed', 'no room');
    assert.deepEqual(await phase('s1'), ['active', 'last deploy failed: no room']);
    const fixed = await deploy('s1');
    await systems.finishAction(fixed.id, 'me', 'succeeded', '');
    assert.deepEqual(await phase('s1'), ['active', '']);
  });

  it('a teardown that fails stays deleting; a deploy of it is refused (deleting → pending is no arrow); a second teardown ends it', async () => {
    const down = await teardown('s1');
    assert.deepEqual(await phase('s1'), ['deleting', '']);
    await systems.finishAction(down.id, 'me', 'failed', '1 instance(s) left');
    assert.deepEqual(await phase('s1'), ['deleting', '1 instance(s) left']);
    await assert.rejects(
      systems.acceptAction({
        id: nextId(),
        system: 's1',
        action: { kind: 'deploy', path: '/' },
        owner: 'me',
      }),
      (e: unknown) =>
        e instanceof BerthError && e.code === 'illegal_transition' && /berth teardown s1/.test(e.message),
    );
    const refusedWrites = await modelRead(store.backend, (db) =>
      db
        .selectFrom('model_actions')
        .selectAll()
        .where('system', '=', 's1')
        .where('state', '=', 'accepted')
        .execute(),
    );
    assert.deepEqual(refusedWrites, [], 'the refused deploy wrote nothing');
    const again = await teardown('s1');
    await systems.finishAction(again.id, 'me', 'succeeded', '');
    assert.deepEqual(await phase('s1'), ['gone', '']);
  });

  it('an action ends once: a second finish is refused by the action table and changes nothing', async () => {
    const a = await deploy('s2');
    await systems.finishAction(a.id, 'me', 'succeeded', '');
    assert.equal(await systems.finishAction(a.id, 'me', 'failed', 'late'), false);
    assert.equal((await systems.getAction(a.id)).state, 'succeeded');
  });
});
