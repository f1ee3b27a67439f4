import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { type ActualLRPRef, type BbsStore, openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { desiredDefinition } from '../testing/bbs-fixtures.js';
import { moveToAnotherCell, p1Work, startedSimulatedRep, withMethod } from '../testing/rep-fixtures.js';
import type { SimulatedExecutor } from '../testing/simulated-executor.js';
import type { Rep } from './rep.js';

/**
 * The rep's polling pass against a real SQLite BBS, its containers simulated (below the
 * `CellExecutor` seam): a pass reconciles each container against the cell's one list of records,
 * and reads a record on its own only when the list does not hold it as this container's.
 */
describe('Rep polling pass', () => {
  let dir: string;
  let store: SqlBbsStore;
  /** `process_guid/index` of each single-record read the rep made. */
  let reads: string[];
  /** The name of every store method the rep called. */
  let calls: string[];
  let bbs: BbsStore;
  let executor: SimulatedExecutor;
  let rep: Rep;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-rep-poll-'));
    store = await openBbsStore(join(dir, 'bbs.sqlite3'));
    reads = [];
    calls = [];
    // The store itself, with its single-record reads counted, and the name of every call kept.
    const reading = withMethod(store, 'getActualLRP', (ref: ActualLRPRef) => {
      reads.push(`${ref.process_guid}/${ref.index}`);
      return store.getActualLRP(ref);
    });
    bbs = new Proxy(reading, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(property));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    ({ rep, executor } = await startedSimulatedRep(bbs, dir));
  });
  afterEach(async () => {
    rep.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const work = p1Work;

  async function allRunning(count: number): Promise<void> {
    for (let i = 0; i < 500; i++) {
      const records = await store.listActualLRPs({ cell_id: 'cell-1' });
      if (records.length === count && records.every((a) => a.state === 'RUNNING')) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.fail(`${count} instances did not all reach RUNNING`);
  }

  it('a pass over running instances reads no record on its own', async () => {
    await store.desireLRP(desiredDefinition('p1', 5));
    await rep.perform({ lrps: [0, 1, 2, 3, 4].map(work), tasks: [] });
    await allRunning(5);
    reads = [];
    await rep.poll();
    assert.deepEqual(reads, []);
    // And it still acts: a container whose instance now runs on another cell goes (row "RUNNING |
    // RUNNING on O"), decided by a fresh read since the list no longer holds its record.
    const [first] = await store.listActualLRPs({ cell_id: 'cell-1' });
    assert.ok(first);
    await moveToAnotherCell(store, first);
    await rep.poll();
    // (The container's own end may read it once more, as any container event does.)
    assert.ok(reads.length > 0, 'the container whose record left the list read it');
    assert.deepEqual(new Set(reads), new Set([`p1/${first.index}`]), 'no other container read its record');
    assert.equal(executor.get(first.instance_guid), undefined, 'its container is deleted');
    assert.equal(executor.list().length, 4);
  });

  it('a pass is one request to the BBS, and a stop it takes is acted on and acknowledged', async () => {
    await store.desireLRP(desiredDefinition('p1', 3));
    await rep.perform({ lrps: [0, 1, 2].map(work), tasks: [] });
    await allRunning(3);
    // Let the starts' own reconciles settle, then count one pass alone.
    await rep.poll();
    calls = [];
    await rep.poll();
    assert.deepEqual(calls, ['cellPass'], 'nothing changed: the pass is its one request');

    // Scale down: the pass takes the stop for index 2, stops its container, acknowledges it.
    await store.updateDesiredLRP({ process_guid: 'p1', update: { instances: 2 } });
    const [two] = (await store.listActualLRPs({ cell_id: 'cell-1' })).filter((a) => a.index === 2);
    assert.ok(two);
    calls = [];
    await rep.poll();
    assert.equal(calls[0], 'cellPass');
    assert.ok(calls.includes('ackStopRequests'));
    assert.equal(executor.get(two.instance_guid), undefined, 'the stopped container is gone');
    assert.equal((await store.countRecords()).stop_requests, 0, 'the stop request was acknowledged');
  });

  it('an idle pass sends back the digest it was given and is answered without the lists, and still acts on a change', async () => {
    const answers: { known: boolean; unchanged: boolean; listed: number }[] = [];
    const counted = withMethod(bbs, 'cellPass', async (req: Parameters<BbsStore['cellPass']>[0]) => {
      const pass = await bbs.cellPass(req);
      answers.push({
        known: req.known_digest !== undefined,
        unchanged: pass.unchanged === true,
        listed: pass.actual_lrps.length,
      });
      return pass;
    });
    rep.stop();
    ({ rep, executor } = await startedSimulatedRep(counted, dir));
    await store.desireLRP(desiredDefinition('p1', 3));
    await rep.perform({ lrps: [0, 1, 2].map(work), tasks: [] });
    await allRunning(3);
    await rep.poll();
    answers.length = 0;
    await rep.poll();
    await rep.poll();
    assert.deepEqual(answers, [
      { known: true, unchanged: true, listed: 0 },
      { known: true, unchanged: true, listed: 0 },
    ]);
    // An instance moved to another cell: the digest no longer matches, the lists come whole, and
    // the container of the instance that left is deleted as before.
    const [first] = await store.listActualLRPs({ cell_id: 'cell-1' });
    assert.ok(first);
    await moveToAnotherCell(store, first);
    answers.length = 0;
    await rep.poll();
    assert.deepEqual(answers, [{ known: true, unchanged: false, listed: 2 }]);
    assert.equal(executor.get(first.instance_guid), undefined, 'its container is deleted');
    assert.equal(executor.list().length, 2);
  });
});
