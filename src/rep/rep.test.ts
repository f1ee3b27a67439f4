import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { BerthError } from '../core/index.js';
import { Executor } from '../executor/index.js';
import { PodRuntime } from '../runtime/index.js';
import { desiredDefinition } from '../testing/bbs-fixtures.js';
import { p1Work, testRep, withMethod } from '../testing/rep-fixtures.js';
import { evacuatedTaskReason } from './evacuation-plan.js';
import type { Rep } from './rep.js';

/**
 * The rep against a real SQLite BBS and a real executor whose runtime cannot fetch images: every
 * container it runs completes as `no-image` before any pod exists, and the images it was asked
 * for are recorded. (Runs on real runc are the cluster tests'.)
 */
describe('Rep', () => {
  let dir: string;
  let bbs: SqlBbsStore;
  let asked: string[];
  let executor: Executor;
  let clockMs: number;
  let rep: Rep;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-rep-'));
    bbs = await openBbsStore(join(dir, 'bbs.sqlite3'));
    asked = [];
    executor = new Executor({
      runtime: new PodRuntime(join(dir, 'cell'), {
        resolve: async (ref) => {
          asked.push(ref);
          throw new Error('no registry in this test');
        },
      }),
      capacity: { memory_mb: 4096, disk_mb: 4096, containers: 10 },
      hostAddress: '127.0.0.1',
    });
    clockMs = Date.parse('2030-01-01T00:00:00Z');
    rep = testRep(bbs, executor, { pollIntervalMs: 20, now: () => new Date(clockMs) });
  });
  afterEach(async () => {
    rep.stop();
    await bbs.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function until(check: () => boolean | Promise<boolean>): Promise<void> {
    for (let i = 0; i < 500 && !(await check()); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(await check(), 'condition not reached in 5 s');
  }

  const work = p1Work;

  it('starts the definition desired now, not one removed under the same process guid', async () => {
    await bbs.desireLRP(desiredDefinition('p1', 2, { image: 'old-image' }));
    await rep.perform({ lrps: [work(0)], tasks: [] });
    await until(() => asked.length === 1);
    await bbs.removeDesiredLRP({ process_guid: 'p1' });
    // Index 0 stays CLAIMED by this cell (asked to stop); index 1 is created UNCLAIMED again.
    await bbs.desireLRP(desiredDefinition('p1', 2, { image: 'new-image' }));
    await rep.perform({ lrps: [work(1)], tasks: [] });
    await until(() => asked.length === 2);
    assert.deepEqual(asked, ['old-image', 'new-image']);
  });

  it('a claimed instance whose start is refused before it began leaves no reservation: the next pass gives it back', async () => {
    await bbs.desireLRP(desiredDefinition('p1', 1));
    // The executor refuses the run (a spec it cannot prepare) after the claim landed.
    const refusing = withMethod(executor, 'run', async () => {
      throw new BerthError('invalid_argument', 'the executor cannot run this spec');
    });
    const refusingRep = testRep(bbs, refusing, { pollIntervalMs: 60 * 60_000, now: () => new Date(clockMs) });
    try {
      await refusingRep.perform({ lrps: [work(0)], tasks: [] });
      await until(
        async () => (await bbs.getActualLRP({ process_guid: 'p1', index: 0 })).instance?.state === 'CLAIMED',
      );
      // Kept RESERVED, the container would hold the record CLAIMED for good (RESERVED / ANY: Do Nothing).
      await until(() => executor.list().length === 0);
      await refusingRep.poll();
      const record = (await bbs.getActualLRP({ process_guid: 'p1', index: 0 })).instance;
      assert.equal(record?.state, 'UNCLAIMED', 'No Container / CLAIMED by A: given back to the auction');
    } finally {
      refusingRep.stop();
    }
  });

  it('evacuation fails a task still running here once the deadline passes on the rep clock', async () => {
    await bbs.desireTask({
      task_guid: 't1',
      domain: 'd',
      image: 'task-image',
      env: {},
      memory_mb: 64,
      disk_mb: 0,
      result_file: '',
      completion_callback_url: '',
      placement_tags: [],
    });
    await rep.perform({
      lrps: [],
      tasks: [{ task_guid: 't1', domain: 'd', memory_mb: 64, disk_mb: 0, placement_tags: [] }],
    });
    await until(async () => (await bbs.getTask({ task_guid: 't1' })).state === 'RUNNING');
    const evacuated = rep.evacuate();
    // Tasks never move: the hand-over holds on until its deadline, an hour away on the rep's clock.
    assert.equal(rep.isEvacuating, true);
    clockMs += 2 * 60 * 60_000;
    await evacuated;
    const task = await bbs.getTask({ task_guid: 't1' });
    assert.equal(task.state, 'COMPLETED');
    assert.equal(task.failure_reason, evacuatedTaskReason);
    assert.equal(executor.list().length, 0);
    assert.deepEqual(await rep.perform({ lrps: [work(0)], tasks: [] }), {
      failed_lrps: [work(0)],
      failed_tasks: [],
    });
  });
});
