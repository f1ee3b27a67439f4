import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { type BbsStore, openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { desiredDefinition } from '../testing/bbs-fixtures.js';
import { moveToAnotherCell, p1Work, startedSimulatedRep } from '../testing/rep-fixtures.js';
import type { SimulatedExecutor } from '../testing/simulated-executor.js';
import type { Rep } from './rep.js';

/** The store methods whose calls the tests count. */
const counted = [
  'getActualLRP',
  'claimActualLRP',
  'claimActualLRPs',
  'unclaimActualLRP',
  'startActualLRP',
  'startActualLRPs',
  'crashActualLRP',
] as const;
type Counted = (typeof counted)[number];

/**
 * How a rep starts the instances one auction handed it, against a real SQLite BBS with its
 * containers simulated (below the `CellExecutor` seam): one claim request for all of them, and no
 * read of a record the rep itself just wrote.
 */
describe('Rep starting work', () => {
  let dir: string;
  let store: SqlBbsStore;
  let calls: Record<Counted, number>;
  /** Instances whose start was written, singly or in a batch. */
  let startsWritten: number;
  /** What the next claimActualLRPs call does instead of claiming (a test's failure). */
  let claimsFail: Error | undefined;
  /** Claim requests that land and then fail, as a timed-out answer does. */
  let claimAnswersLost: number;
  let executor: SimulatedExecutor;
  let rep: Rep;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-rep-start-'));
    store = await openBbsStore(join(dir, 'bbs.sqlite3'));
    calls = Object.fromEntries(counted.map((name) => [name, 0])) as Record<Counted, number>;
    claimsFail = undefined;
    claimAnswersLost = 0;
    startsWritten = 0;
    const bbs = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (typeof value !== 'function') return value;
        const method = (value as (...a: unknown[]) => unknown).bind(target);
        if (!(counted as readonly (string | symbol)[]).includes(property)) return method;
        return (...args: unknown[]) => {
          calls[property as Counted] += 1;
          if (property === 'startActualLRP') startsWritten += 1;
          if (property === 'startActualLRPs')
            startsWritten += (args[0] as { starts: unknown[] }).starts.length;
          if (property === 'claimActualLRPs' && claimsFail) return Promise.reject(claimsFail);
          if (property === 'claimActualLRPs' && claimAnswersLost > 0) {
            claimAnswersLost -= 1;
            return Promise.resolve(method(...args)).then(() => {
              throw new Error('the answer timed out');
            });
          }
          return method(...args);
        };
      },
    }) as BbsStore;
    ({ rep, executor } = await startedSimulatedRep(bbs, dir));
  });
  afterEach(async () => {
    rep.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function until(what: string, done: () => Promise<boolean> | boolean): Promise<void> {
    for (let i = 0; i < 500; i++) {
      if (await done()) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.fail(`timed out waiting for ${what}`);
  }

  async function statesOf(processGuid: string): Promise<string[]> {
    const records = await store.listActualLRPs({ process_guid: processGuid });
    return records.map((a) => `${a.index}:${a.state}:${a.cell_id}`);
  }

  it('claims all of a perform in one request and starts each with one write, reading none', async () => {
    await store.desireLRP(desiredDefinition('p1', 5));
    const before = { ...calls, startsWritten };
    // The five containers start together (held, then released in one turn): one start request.
    const starts = executor.holdStarts();
    await rep.perform({ lrps: [0, 1, 2, 3, 4].map(p1Work), tasks: [] });
    await until('5 containers ready to start', () => starts.held() === 5);
    starts.release();
    await until('5 RUNNING', async () => (await statesOf('p1')).every((s) => s.endsWith(':RUNNING:cell-1')));
    assert.equal(calls.claimActualLRPs - before.claimActualLRPs, 1);
    assert.equal(calls.claimActualLRP - before.claimActualLRP, 0);
    assert.equal(calls.getActualLRP - before.getActualLRP, 0, 'no record read');
    assert.equal(startsWritten - before.startsWritten, 5, 'one start per instance');
    assert.equal(calls.startActualLRPs - before.startActualLRPs, 1);
    assert.equal(calls.startActualLRP - before.startActualLRP, 0);
    // A pass whose list was read before the starts cannot make them again either.
    await rep.poll();
    assert.equal(startsWritten - before.startsWritten, 5);
    assert.equal(calls.getActualLRP - before.getActualLRP, 0);
  });

  it('a refused claim gives up its reservation; the others start', async () => {
    await store.desireLRP(desiredDefinition('p1', 2));
    const [zero] = await store.listActualLRPs({ process_guid: 'p1' });
    assert.ok(zero);
    await store.claimActualLRP({
      process_guid: 'p1',
      index: 0,
      expected: zero.modification_tag,
      instance_key: { instance_guid: 'other', cell_id: 'cell-2' },
    });
    await rep.perform({ lrps: [p1Work(0), p1Work(1)], tasks: [] });
    await until('index 1 RUNNING', async () => (await statesOf('p1')).includes('1:RUNNING:cell-1'));
    assert.deepEqual(await statesOf('p1'), ['0:CLAIMED:cell-2', '1:RUNNING:cell-1']);
    assert.deepEqual(
      executor.list().map((c) => (c.tags.kind === 'lrp' ? c.tags.index : -1)),
      [1],
    );
  });

  it('a claim whose answer was lost (it landed) is sent again and claims the same instances: they run, none is given back', async () => {
    await store.desireLRP(desiredDefinition('p1', 3));
    claimAnswersLost = 1;
    await rep.perform({ lrps: [0, 1, 2].map(p1Work), tasks: [] });
    await until('all RUNNING here', async () =>
      (await statesOf('p1')).every((s) => s.endsWith(':RUNNING:cell-1')),
    );
    await rep.poll();
    assert.equal(calls.claimActualLRPs, 2, 'the lost claim and its retry');
    assert.equal(calls.unclaimActualLRP, 0, 'nothing given back');
    assert.equal(executor.list().length, 3);
  });

  it('a claim request that fails leaves no reservation and the instances UNCLAIMED', async () => {
    await store.desireLRP(desiredDefinition('p1', 3));
    claimsFail = new Error('the BBS is away');
    await rep.perform({ lrps: [0, 1, 2].map(p1Work), tasks: [] });
    await until('the reservations gone', () => executor.list().length === 0);
    assert.deepEqual(await statesOf('p1'), ['0:UNCLAIMED:', '1:UNCLAIMED:', '2:UNCLAIMED:']);
  });

  it('a record another cell took meanwhile: the stale copy loses its write, a fresh read decides', async () => {
    await store.desireLRP(desiredDefinition('p1', 1));
    await rep.perform({ lrps: [p1Work(0)], tasks: [] });
    await until('RUNNING', async () => (await statesOf('p1')).includes('0:RUNNING:cell-1'));
    const [mine] = executor.list();
    assert.ok(mine);
    const running = (await store.getActualLRP({ process_guid: 'p1', index: 0 })).instance;
    assert.ok(running);
    await moveToAnotherCell(store, running);
    const crashesBefore = calls.crashActualLRP;
    // The container exits: its reconcile acts on the rep's own copy (RUNNING here), whose crash
    // write loses; the next pass reads the record and deletes the container ("RUNNING on O").
    await executor.stopContainer(mine.guid);
    await rep.poll();
    await until('the container deleted', () => executor.get(mine.guid) === undefined);
    assert.deepEqual(
      await statesOf('p1'),
      ['0:RUNNING:cell-2'],
      'the other cell keeps it, no crash recorded',
    );
    assert.ok(calls.crashActualLRP - crashesBefore <= 1, 'at most the one lost crash write');
  });
});
