import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { openBbsStore, type SqlBbsStore, type TaskDefinition } from '../bbs/index.js';
import { repClientForCell } from '../rep/index.js';
import { desiredDefinition, type FakeClock, fakeClock } from '../testing/bbs-store-contract.js';
import { FakeRepServer } from '../testing/fake-rep-server.js';
import { AuctioneerService, type AuctioneerServiceOptions } from './index.js';

const presenceTtl = 60_000;

function taskDefinition(guid: string, extra: Partial<TaskDefinition> = {}): TaskDefinition {
  return {
    task_guid: guid,
    domain: 'd',
    image: 'busybox',
    env: {},
    memory_mb: 64,
    disk_mb: 0,
    result_file: '',
    completion_callback_url: '',
    placement_tags: [],
    ...extra,
  };
}

/**
 * Rep clients over HTTP that note the cell of each state read (`stateCalls`, in order) and how many
 * state reads came before each perform (`performedAfter`); the next `failPerforms` performs fail
 * as an unreachable rep's would.
 */
function watchedReps(): {
  watch: { stateCalls: string[]; performedAfter: number[]; failPerforms: number };
  repClientFor: AuctioneerServiceOptions['repClientFor'];
} {
  const watch = { stateCalls: [] as string[], performedAfter: [] as number[], failPerforms: 0 };
  const repClientFor: AuctioneerServiceOptions['repClientFor'] = (c) => {
    const client = repClientForCell(c, { timeoutMs: 2_000 });
    return {
      state: () => {
        watch.stateCalls.push(c.cell_id);
        return client.state();
      },
      perform: (work) => {
        watch.performedAfter.push(watch.stateCalls.length);
        return watch.failPerforms-- > 0
          ? Promise.reject(new Error('connect ECONNREFUSED'))
          : client.perform(work);
      },
    };
  };
  return { watch, repClientFor };
}

describe('AuctioneerService against SQLite and HTTP reps', () => {
  let dir: string;
  let clock: FakeClock;
  let bbs: SqlBbsStore;
  let reps: FakeRepServer[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-auctioneer-'));
    clock = fakeClock(Date.parse('2030-01-01T00:00:00Z'));
    bbs = await openBbsStore(join(dir, 'bbs.sqlite3'), { now: clock.now });
    reps = [];
  });
  afterEach(async () => {
    await Promise.all(reps.map((r) => r.close()));
    await bbs.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function cell(
    cellId: string,
    zone: string,
    slots: number,
    memoryPerSlot = 64,
  ): Promise<FakeRepServer> {
    const rep = new FakeRepServer({
      bbs,
      cellId,
      zone,
      capacity: { memory_mb: slots * memoryPerSlot, disk_mb: 1024, containers: 100 },
    });
    await rep.listen();
    await rep.heartbeat(presenceTtl);
    reps.push(rep);
    return rep;
  }

  /** Started, woken by the store's events alone: its safety-net interval is an hour. */
  function startedOnEvents(
    repClientFor: AuctioneerServiceOptions['repClientFor'] = (c) => repClientForCell(c, { timeoutMs: 2_000 }),
  ): AuctioneerService {
    const service = new AuctioneerService({
      bbs,
      repClientFor,
      config: { batchIntervalMs: 3_600_000 },
      now: clock.now,
      onStoreEvents: (listener) => bbs.onEvents(listener),
    });
    service.start();
    return service;
  }

  function auctioneer(extra: Partial<AuctioneerServiceOptions['config']> = {}): AuctioneerService {
    return new AuctioneerService({
      bbs,
      repClientFor: (c) => repClientForCell(c, { timeoutMs: 2_000 }),
      config: { batchIntervalMs: 10, ...extra },
      now: clock.now,
    });
  }

  it('places every instance of a DesiredLRP on the cells, within capacity, and acks the requests', async () => {
    const cells = [
      await cell('cell-a', 'z1', 4),
      await cell('cell-b', 'z2', 4),
      await cell('cell-c', 'z3', 4),
    ];
    await bbs.desireLRP(desiredDefinition('web', 10));
    const report = await auctioneer().runOnce();
    assert.equal(report.taken, 10);
    assert.equal(report.placed, 10);
    assert.equal(report.retrying, 0);
    for (const rep of cells) {
      const state = rep.state();
      assert.ok(state.used.memory_mb <= state.capacity.memory_mb, `${rep.options.cellId} over capacity`);
      assert.ok(
        rep.instances.size >= 3,
        `${rep.options.cellId} got ${rep.instances.size}: spread over cells`,
      );
    }
    const actuals = await bbs.listActualLRPs({ process_guid: 'web' });
    assert.deepEqual(
      actuals.map((a) => a.state),
      Array(10).fill('CLAIMED'),
    );
    assert.equal((await bbs.countRecords()).start_requests, 0);
  });

  it('retries work a cell refused on the next batch, acking only once placed', async () => {
    const rep = await cell('cell-a', 'z1', 4);
    let refusals = 1;
    rep.refuse = () => refusals-- > 0;
    await bbs.desireLRP(desiredDefinition('api', 1));
    const service = auctioneer();

    const first = await service.runOnce();
    assert.equal(first.placed, 0);
    assert.equal(first.retrying, 1);
    assert.equal((await bbs.getActualLRP({ process_guid: 'api', index: 0 })).instance?.state, 'UNCLAIMED');
    assert.equal((await bbs.countRecords()).start_requests, 1, 'not acked while unplaced');

    const second = await service.runOnce();
    assert.equal(second.taken, 0, 'the request is hidden while the auctioneer holds it');
    assert.equal(second.placed, 1);
    assert.equal((await bbs.getActualLRP({ process_guid: 'api', index: 0 })).instance?.state, 'CLAIMED');
    assert.equal((await bbs.countRecords()).start_requests, 0);
    assert.equal(rep.received.length, 2);
  });

  it('asks a cell its state again only once work went unplaced (or its kept state is old, or it refused work)', async () => {
    // Two slots a cell: the second batch must count the first one's work without asking.
    const cells = [await cell('cell-a', 'z1', 2), await cell('cell-b', 'z1', 2)];
    const { watch, repClientFor } = watchedReps();
    const service = new AuctioneerService({
      bbs,
      repClientFor,
      config: { batchIntervalMs: 10, cellStateMaxAgeMs: 1_000 },
      now: clock.now,
    });
    await bbs.desireLRP(desiredDefinition('a', 2));
    assert.equal((await service.runOnce()).placed, 2);
    assert.equal(watch.stateCalls.length, 2, 'the first batch asks every cell');

    await bbs.desireLRP(desiredDefinition('b', 1));
    const second = await service.runOnce();
    assert.equal(second.placed, 1);
    assert.equal(
      watch.stateCalls.length,
      2,
      'within a second, the kept states (with the first batch added) serve',
    );

    // One slot is left in all: of three, two cannot fit. The kept states say so: no cell is
    // offered what it has no room for (a state without the accepted work would offer it all).
    await bbs.desireLRP(desiredDefinition('c', 3));
    const third = await service.runOnce();
    assert.equal(third.placed, 1);
    assert.equal(watch.stateCalls.length, 2);
    const offered = cells.reduce((n, rep) => n + rep.received.reduce((m, w) => m + w.lrps.length, 0), 0);
    assert.equal(offered, 4, 'every piece offered was accepted: 2 + 1 + 1');

    // Work went unplaced, so the next batch asks every cell again (room may have come).
    await service.runOnce();
    assert.equal(watch.stateCalls.length, 4);
  });

  it('asks again only the cell that could not take its work, not every cell', async () => {
    await cell('cell-a', 'z1', 4);
    await cell('cell-b', 'z1', 4);
    const { watch, repClientFor } = watchedReps();
    const service = new AuctioneerService({
      bbs,
      repClientFor,
      config: { batchIntervalMs: 10 },
      now: clock.now,
    });
    await bbs.desireLRP(desiredDefinition('a', 2));
    assert.equal((await service.runOnce()).placed, 2);
    assert.deepEqual(watch.stateCalls.sort(), ['cell-a', 'cell-b']);

    // One cell (whichever gets work first) cannot be reached: its work is retried next batch.
    watch.failPerforms = 1;
    await bbs.desireLRP(desiredDefinition('b', 2));
    const second = await service.runOnce();
    assert.equal(second.placed, 1);
    assert.equal(second.retrying, 1);
    const third = await service.runOnce();
    assert.equal(third.placed, 1);
    assert.equal(third.statesRead, 1, 'only the cell that failed is asked again');
    assert.equal(watch.stateCalls.length, 3);
  });

  it('places on a state past its age at once and reads it again beside the batch', async () => {
    const rep = await cell('cell-a', 'z1', 4);
    const { watch, repClientFor } = watchedReps();
    const service = new AuctioneerService({
      bbs,
      repClientFor,
      config: { batchIntervalMs: 10, cellStateMaxAgeMs: 60_000 },
      now: clock.now,
    });
    await bbs.desireLRP(desiredDefinition('a', 1));
    await service.runOnce();
    assert.equal(watch.stateCalls.length, 1);
    clock.advance(61_000);
    await rep.heartbeat(presenceTtl);
    await bbs.desireLRP(desiredDefinition('b', 1));
    const report = await service.runOnce();
    assert.equal(report.placed, 1);
    assert.equal(report.statesRead, 0, 'nothing read on the batch path');
    assert.equal(watch.performedAfter.at(-1), 1, 'the work went out before the state was read again');
    for (let i = 0; i < 300 && watch.stateCalls.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(watch.stateCalls.length, 2, 'the stale state is read again beside the batch');
    assert.equal(rep.instances.size, 2);
  });

  it('records a placement error on an index > 1 with no room in its zone and acks it', async () => {
    await cell('cell-a', 'z1', 10);
    // z2 has a cell, so it counts as a zone, but no room at all.
    await cell('cell-b', 'z2', 0);
    await bbs.desireLRP(desiredDefinition('worker', 4));
    const report = await auctioneer().runOnce();
    assert.equal(report.placementErrors, 1);
    const actuals = await bbs.listActualLRPs({ process_guid: 'worker' });
    const failed = actuals.filter((a) => a.state === 'UNCLAIMED');
    assert.equal(failed.length, 1, 'one of index 2 and 3 prefers z2');
    assert.ok((failed[0]?.index ?? 0) > 1, 'index ≤ 1 falls back to another zone');
    assert.equal(failed[0]?.placement_error, 'no room in zone z2');
    assert.equal(actuals.filter((a) => a.state === 'CLAIMED').length, 3);
    assert.equal((await bbs.countRecords()).start_requests, 0, 'acked once the error is recorded');
  });

  it('skips a cell whose state cannot be fetched and places on the others', async () => {
    const sick = await cell('cell-a', 'z1', 10);
    const healthy = await cell('cell-b', 'z1', 10);
    sick.unavailable = true;
    await bbs.desireLRP(desiredDefinition('svc', 3));
    const report = await auctioneer().runOnce();
    assert.equal(report.unreachableCells, 1);
    assert.equal(report.placed, 3);
    assert.equal(healthy.instances.size, 3);
    assert.equal(sick.instances.size, 0);
  });

  it('places tasks, which the rep starts, and leaves an unplaceable task in the outbox', async () => {
    const rep = await cell('cell-a', 'z1', 2);
    await bbs.desireTask(taskDefinition('t-small'));
    await bbs.desireTask(taskDefinition('t-huge', { memory_mb: 100_000 }));
    const report = await auctioneer({ retryBatches: 1 }).runOnce();
    assert.equal(report.placed, 1);
    assert.equal(report.dropped, 1);
    assert.ok(rep.tasks.has('t-small'));
    const small = await bbs.getTask({ task_guid: 't-small' });
    assert.equal(small.state, 'RUNNING');
    assert.equal(small.cell_id, 'cell-a');
    assert.equal((await bbs.getTask({ task_guid: 't-huge' })).state, 'PENDING');
    // Only the unplaced task's request is left: it comes back after the visibility timeout.
    assert.equal((await bbs.countRecords()).start_requests, 1);
    clock.advance(31_000);
    await rep.heartbeat(presenceTtl);
    const again = await auctioneer().runOnce();
    assert.equal(again.taken, 1);
  });

  it('keeps a task that waits for room past retryBatches, and places it once room appears', async () => {
    const rep = await cell('cell-a', 'z1', 1);
    await bbs.desireTask(taskDefinition('t-first'));
    await bbs.desireTask(taskDefinition('t-second'));
    const service = auctioneer({ retryBatches: 1 });
    const first = await service.runOnce();
    assert.equal(first.placed, 1);
    assert.equal(first.dropped, 0, 'the task that lacks room is not given up');
    for (let i = 0; i < 5; i++) assert.equal((await service.runOnce()).dropped, 0);
    assert.equal(service.pending, 1);
    const [placedFirst] = [...rep.tasks.keys()];
    assert.ok(placedFirst);
    rep.tasks.delete(placedFirst);
    const later = await service.runOnce();
    assert.equal(later.placed, 1);
    assert.equal(service.pending, 0);
    assert.equal(rep.tasks.size, 1);
  });

  it('gives up waiting for room after roomWaitMs, and the outbox brings the task back', async () => {
    await cell('cell-a', 'z1', 1);
    await bbs.desireTask(taskDefinition('t-first'));
    await bbs.desireTask(taskDefinition('t-second'));
    const service = auctioneer({ roomWaitMs: 5_000 });
    assert.equal((await service.runOnce()).placed, 1);
    clock.advance(4_000);
    assert.equal((await service.runOnce()).dropped, 0);
    clock.advance(1_000);
    assert.equal((await service.runOnce()).dropped, 1);
    assert.equal(service.pending, 0);
    assert.equal((await bbs.countRecords()).start_requests, 1, 'its request is still in the outbox');
  });

  it('takes nothing more from the outbox while its pool holds a batch of waiting work', async () => {
    await cell('cell-a', 'z1', 1);
    for (const guid of ['t-1', 't-2', 't-3']) await bbs.desireTask(taskDefinition(guid));
    const service = auctioneer({ batchSize: 1 });
    assert.deepEqual(await taken(service), { taken: 1, placed: 1 });
    assert.deepEqual(await taken(service), { taken: 1, placed: 0 });
    assert.equal(service.pending, 1);
    assert.deepEqual(await taken(service), { taken: 0, placed: 0 }, 'the pool is full: the outbox keeps t-3');
    assert.equal(service.pending, 1);
  });

  async function taken(service: AuctioneerService): Promise<{ taken: number; placed: number }> {
    const report = await service.runOnce();
    return { taken: report.taken, placed: report.placed };
  }

  it('auctions work handed over in process (the converger kick) once', async () => {
    const rep = await cell('cell-a', 'z1', 4);
    await bbs.desireTask(taskDefinition('t-kicked'));
    const service = auctioneer();
    // The outbox row is gone (acked by an earlier auction whose rep then lost the work).
    const [delivery] = await bbs.takeTaskStartRequests({ limit: 10, visibility_ms: 1 });
    assert.ok(delivery);
    await bbs.ackTaskStartRequests({ ids: [delivery.id] });
    service.requestAuctions({ tasks: [delivery.request] });
    service.requestAuctions({ tasks: [delivery.request] });
    assert.equal(service.pending, 1, 'deduplicated');
    const report = await service.runOnce();
    assert.equal(report.placed, 1);
    assert.equal(rep.received.length, 1);
    assert.equal((await bbs.getTask({ task_guid: 't-kicked' })).state, 'RUNNING');
  });

  it('retries work waiting for room at once when a cell appears, with the interval at an hour', async () => {
    const service = startedOnEvents();
    try {
      await bbs.desireTask(taskDefinition('t-waits'));
      // Woken by the task: no cell yet, so the work stays in the pool.
      for (let i = 0; i < 200 && service.pending === 0; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(service.pending, 1);
      const rep = await cell('cell-late', 'z1', 2);
      for (let i = 0; i < 300 && !rep.tasks.has('t-waits'); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(rep.tasks.has('t-waits'), 'placed on the cell that appeared, not an hour later');
      // A heartbeat of a cell already live is no news: only the first one woke the auctioneer.
      let woken = 0;
      const off = bbs.onEvents((types) => {
        if (types.includes('cell_appeared')) woken++;
      });
      await rep.heartbeat(presenceTtl);
      off();
      assert.equal(woken, 0);
    } finally {
      await service.stop();
    }
  });

  it('retries work waiting for room at once when a task ends, with the interval at an hour', async () => {
    const rep = await cell('cell-a', 'z1', 1);
    const service = startedOnEvents();
    try {
      await bbs.desireTask(taskDefinition('t-first'));
      await bbs.desireTask(taskDefinition('t-second'));
      const settled = () => rep.tasks.size === 1 && service.pending === 1;
      for (let i = 0; i < 300 && !settled(); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(settled(), 'one task placed, the other waiting for room');
      const [guid] = [...rep.tasks.keys()];
      assert.ok(guid);
      const running = await bbs.getTask({ task_guid: guid });
      // The cell ends the task and deletes its container: room, and a task_changed event.
      rep.tasks.delete(guid);
      await bbs.completeTask({
        task_guid: guid,
        expected: running.modification_tag,
        cell_id: 'cell-a',
        failed: false,
        failure_reason: '',
        result: '',
      });
      for (let i = 0; i < 300 && rep.tasks.size === 0; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(rep.tasks.size, 1, 'the waiting task is placed, not an hour later');
      assert.ok(!rep.tasks.has(guid));
    } finally {
      await service.stop();
    }
  });

  it('keeps cell states while nothing can have freed room, and reads them again after an instance went', async () => {
    const rep = await cell('cell-a', 'z1', 4);
    const { watch, repClientFor } = watchedReps();
    const service = startedOnEvents(repClientFor);
    const placed = async (n: number) => {
      for (let i = 0; i < 300 && rep.instances.size < n; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(rep.instances.size, n);
    };
    try {
      await bbs.desireLRP(desiredDefinition('first', 1));
      await placed(1);
      assert.equal(watch.stateCalls.length, 1);
      // A quiet minute: the kept state (with the instance it accepted) still serves.
      clock.advance(60_000);
      await rep.heartbeat(presenceTtl);
      await bbs.desireLRP(desiredDefinition('second', 1));
      await placed(2);
      assert.equal(watch.stateCalls.length, 1, 'no cell asked again after a quiet minute');
      // An instance went: the cell may have room its kept state does not show.
      const gone = (await bbs.getActualLRP({ process_guid: 'first', index: 0 })).instance;
      assert.ok(gone);
      await bbs.removeActualLRP({ process_guid: 'first', index: 0, expected: gone.modification_tag });
      await bbs.desireLRP(desiredDefinition('third', 1));
      await placed(3);
      assert.equal(watch.stateCalls.length, 2, 'asked again after the instance went');
    } finally {
      await service.stop();
    }
  });

  it('runs batches on its interval until stopped', async () => {
    const rep = await cell('cell-a', 'z1', 4);
    const service = auctioneer();
    service.start();
    await bbs.desireLRP(desiredDefinition('loop', 2));
    for (let i = 0; i < 200 && rep.instances.size < 2; i++) await new Promise((r) => setTimeout(r, 10));
    await service.stop();
    assert.equal(rep.instances.size, 2);
  });
});
