import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { AuctioneerService } from '../auctioneer/index.js';
import {
  type ActualLRP,
  type ActualLRPFilter,
  type BbsStore,
  type CasActualLRPRequest,
  openBbsStore,
  type SqlBbsStore,
  type TaskDefinition,
  type TaskStartRequest,
  type UnclaimActualLRPsRequest,
} from '../bbs/index.js';
import { defaultCrashPolicy, repClientForCell } from '../rep/index.js';
import { desiredDefinition, type FakeClock, fakeClock } from '../testing/bbs-store-contract.js';
import { FakeRepServer } from '../testing/fake-rep-server.js';
import { withMethod } from '../testing/rep-fixtures.js';
import {
  type ConvergerConfig,
  ConvergerService,
  type ConvergerServiceOptions,
  cellDisappearedReason,
  defaultConvergenceConfig,
  pendingExpiredReason,
} from './index.js';

const presenceTtl = 10_000;
const config: ConvergerConfig = {
  ...defaultConvergenceConfig,
  crashPolicy: { ...defaultCrashPolicy, baseMs: 30_000 },
  unclaimedStartTimeoutMs: 30_000,
  taskKickIntervalMs: 30_000,
  taskPendingLimitMs: 10 * 60_000,
  taskCompletedTtlMs: 2 * 60_000,
  intervalMs: 20,
};

function taskDefinition(guid: string): TaskDefinition {
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
  };
}

describe('ConvergerService against SQLite', () => {
  let dir: string;
  let clock: FakeClock;
  let bbs: SqlBbsStore;
  let reps: FakeRepServer[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-converger-'));
    clock = fakeClock(Date.parse('2030-01-01T00:00:00Z'));
    bbs = await openBbsStore(join(dir, 'bbs.sqlite3'), { now: clock.now });
    reps = [];
  });
  afterEach(async () => {
    await Promise.all(reps.map((r) => r.close()));
    await bbs.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function cell(cellId: string, zone = 'z1'): Promise<FakeRepServer> {
    const rep = new FakeRepServer({
      bbs,
      cellId,
      zone,
      capacity: { memory_mb: 1024, disk_mb: 1024, containers: 100 },
    });
    await rep.listen();
    await rep.heartbeat(presenceTtl);
    reps.push(rep);
    return rep;
  }

  function converger(extra: Partial<ConvergerServiceOptions> = {}, store: BbsStore = bbs): ConvergerService {
    return new ConvergerService({ bbs: store, config, now: clock.now, ...extra });
  }

  function auctioneer(): AuctioneerService {
    return new AuctioneerService({
      bbs,
      repClientFor: (c) => repClientForCell(c, { timeoutMs: 2_000 }),
      config: { batchIntervalMs: 10 },
      now: clock.now,
    });
  }

  async function instance(guid: string, index: number): Promise<ActualLRP | null> {
    try {
      return (await bbs.getActualLRP({ process_guid: guid, index })).instance;
    } catch {
      return null;
    }
  }

  it('reaps the instances of a cell whose presence expired; the auctioneer places them elsewhere', async () => {
    const a = await cell('cell-a');
    await bbs.desireLRP(desiredDefinition('web', 4));
    await auctioneer().runOnce();
    assert.equal(a.instances.size, 4);

    // cell-a stops heartbeating; cell-b appears and keeps its presence.
    clock.advance(presenceTtl + 1);
    const b = await cell('cell-b');
    // Given back in one transaction, so their start requests reach the auctioneer together.
    const batches: number[] = [];
    let singles = 0;
    const counting = withMethod(
      withMethod(bbs, 'unclaimActualLRP', (req: CasActualLRPRequest) => {
        singles++;
        return bbs.unclaimActualLRP(req);
      }),
      'unclaimActualLRPs',
      (req: UnclaimActualLRPsRequest) => {
        batches.push(req.unclaims.length);
        return bbs.unclaimActualLRPs(req);
      },
    );
    const report = await converger({}, counting).runOnce();
    assert.equal(report.planned['unclaim-and-start'], 4);
    assert.equal(report.applied, 4);
    assert.deepEqual(batches, [4]);
    assert.equal(singles, 0);
    for (let i = 0; i < 4; i++) assert.equal((await instance('web', i))?.state, 'UNCLAIMED');

    const placed = await auctioneer().runOnce();
    assert.equal(placed.taken, 4, 'each unclaim wrote a start request');
    assert.equal(b.instances.size, 4);
    for (let i = 0; i < 4; i++) {
      const lrp = await instance('web', i);
      assert.equal(lrp?.state, 'CLAIMED');
      assert.equal(lrp?.cell_id, 'cell-b');
    }
  });

  it('creates missing indices with a start request', async () => {
    await bbs.desireLRP(desiredDefinition('api', 3));
    const lost = await instance('api', 1);
    assert.ok(lost);
    await bbs.removeActualLRP({ process_guid: 'api', index: 1, expected: lost.modification_tag });
    const [old] = await bbs.takeStartRequests({ limit: 10, visibility_ms: 1 });
    await bbs.ackStartRequests({ ids: old?.ids ?? [] });

    const report = await converger().runOnce();
    assert.equal(report.planned['create-and-start'], 1);
    assert.equal((await instance('api', 1))?.state, 'UNCLAIMED');
    const [start] = await bbs.takeStartRequests({ limit: 10, visibility_ms: 1 });
    assert.deepEqual(start?.request.indices, [1]);
  });

  it('stops extra indices only when the domain is fresh: CAD for CRASHED, a stop request for RUNNING', async () => {
    const rep = await cell('cell-a');
    await bbs.desireLRP(desiredDefinition('svc', 1));
    // Index 3 runs on cell-a though only 1 instance is desired; index 2 crashed.
    await bbs.startActualLRP({
      process_guid: 'svc',
      index: 3,
      expected: null,
      domain: 'd',
      instance_key: { instance_guid: 'ig-3', cell_id: 'cell-a' },
      net_info: { address: '10.0.0.1', ports: [] },
    });
    await bbs.crashActualLRP({
      process_guid: 'svc',
      index: 2,
      expected: null,
      domain: 'd',
      instance_key: { instance_guid: 'ig-2', cell_id: 'cell-a' },
      state: 'CRASHED',
      crash_count: 3,
      last_crashed_at: clock.now().toISOString(),
      crash_reason: 'exit 1',
    });
    const service = converger({ repClientFor: (c) => repClientForCell(c) });

    const stale = await service.runOnce();
    assert.equal(stale.planned.stop, undefined, 'the domain is not fresh');
    assert.equal(stale.planned['remove-actual'], undefined);
    assert.ok(await instance('svc', 2));
    assert.equal((await bbs.takeStopRequests({ limit: 10, visibility_ms: 1, cell_id: 'cell-a' })).length, 0);

    await bbs.upsertDomain({ domain: 'd', ttl_ms: 0 });
    const fresh = await service.runOnce();
    assert.equal(fresh.planned.stop, 1);
    assert.equal(fresh.planned['remove-actual'], 1);
    assert.equal(await instance('svc', 2), null, 'CRASHED extra is compare-and-deleted');
    assert.equal((await instance('svc', 3))?.state, 'RUNNING', 'the rep removes RUNNING after it stops');
    const stops = await bbs.takeStopRequests({ limit: 10, visibility_ms: 60_000, cell_id: 'cell-a' });
    assert.deepEqual(
      stops.map((s) => [s.request.process_guid, s.request.index, s.request.instance_guid]),
      [['svc', 3, 'ig-3']],
    );
    for (let i = 0; i < 100 && rep.stops.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(
      rep.stops,
      [{ process_guid: 'svc', index: 3, instance_guid: 'ig-3' }],
      'pushed to the rep',
    );

    const again = await service.runOnce();
    assert.equal(again.skipped, 1, 'a stop is not asked again before stopRepeatMs');
  });

  it('restarts a CRASHED instance once its back-off has passed', async () => {
    await cell('cell-a');
    await bbs.desireLRP(desiredDefinition('crashy', 1));
    const unclaimed = await instance('crashy', 0);
    assert.ok(unclaimed);
    const key = { instance_guid: 'ig-0', cell_id: 'cell-a' };
    const claimed = await bbs.claimActualLRP({
      process_guid: 'crashy',
      index: 0,
      expected: unclaimed.modification_tag,
      instance_key: key,
    });
    await bbs.crashActualLRP({
      process_guid: 'crashy',
      index: 0,
      expected: claimed.modification_tag,
      instance_key: key,
      state: 'CRASHED',
      crash_count: 3,
      last_crashed_at: clock.now().toISOString(),
      crash_reason: 'exit 1',
    });
    const service = converger();
    clock.advance(29_999);
    await service.runOnce();
    assert.equal((await instance('crashy', 0))?.state, 'CRASHED', 'crash 3 waits 30 s');
    clock.advance(1);
    const report = await service.runOnce();
    assert.equal(report.planned['restart-crashed'], 1);
    const restarted = await instance('crashy', 0);
    assert.equal(restarted?.state, 'UNCLAIMED');
    assert.equal(restarted?.crash_count, 3, 'the count survives the restart');
  });

  it('re-emits the start of an instance UNCLAIMED too long', async () => {
    await bbs.desireLRP(desiredDefinition('slow', 1));
    const [first] = await bbs.takeStartRequests({ limit: 10, visibility_ms: 1 });
    await bbs.ackStartRequests({ ids: first?.ids ?? [] });
    clock.advance(30_000);
    const report = await converger().runOnce();
    assert.equal(report.planned['re-emit-start'], 1);
    assert.equal(report.applied, 1);
    const [again] = await bbs.takeStartRequests({ limit: 10, visibility_ms: 1 });
    assert.deepEqual(again?.request.indices, [0]);
  });

  it('counts a lost CAS as a conflict and leaves the record to the next pass', async () => {
    await bbs.desireLRP(desiredDefinition('raced', 1));
    // Placed by the auctioneer (its request acked) but never claimed: past the timeout, re-emitted.
    const taken = await bbs.takeStartRequests({ limit: 100, visibility_ms: 0 });
    await bbs.ackStartRequests({ ids: taken.flatMap((d) => d.ids) });
    clock.advance(30_000);
    // Someone else re-emits between the converger's snapshot and its write.
    const racing = new Proxy(bbs, {
      get(target, prop, receiver) {
        if (prop !== 'readConvergenceSnapshot') {
          const value: unknown = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        }
        return async () => {
          const snapshot = await target.readConvergenceSnapshot();
          const lrp = await instance('raced', 0);
          assert.ok(lrp);
          await target.unclaimActualLRP({ process_guid: 'raced', index: 0, expected: lrp.modification_tag });
          return snapshot;
        };
      },
    }) as BbsStore;
    const report = await converger({}, racing).runOnce();
    assert.equal(report.planned['re-emit-start'], 1);
    assert.equal(report.conflicts, 1);
    assert.equal(report.errors, 0);
  });

  describe('tasks', () => {
    it('fails a task still PENDING at the pending limit', async () => {
      await bbs.desireTask(taskDefinition('t-pending'));
      clock.advance(config.taskPendingLimitMs);
      await converger().runOnce();
      const task = await bbs.getTask({ task_guid: 't-pending' });
      assert.equal(task.state, 'COMPLETED');
      assert.equal(task.failed, true);
      assert.equal(task.failure_reason, pendingExpiredReason);
    });

    it('kicks a PENDING task past the kick interval to the auctioneer', async () => {
      await bbs.desireTask(taskDefinition('t-kick'));
      const kicked: TaskStartRequest[] = [];
      const service = converger({ requestTaskAuctions: (tasks) => void kicked.push(...tasks) });
      await service.runOnce();
      assert.equal(kicked.length, 0);
      clock.advance(config.taskKickIntervalMs);
      const report = await service.runOnce();
      assert.equal(report.planned['kick-task'], 1);
      assert.deepEqual(
        kicked.map((t) => t.task_guid),
        ['t-kick'],
      );
      assert.equal((await bbs.getTask({ task_guid: 't-kick' })).state, 'PENDING');
    });

    it('fails a RUNNING task whose cell vanished and never runs it again', async () => {
      const rep = await cell('cell-a');
      await bbs.desireTask(taskDefinition('t-run'));
      await auctioneer().runOnce();
      assert.equal((await bbs.getTask({ task_guid: 't-run' })).state, 'RUNNING');
      clock.advance(presenceTtl + 1);
      await converger().runOnce();
      const task = await bbs.getTask({ task_guid: 't-run' });
      assert.equal(task.state, 'COMPLETED');
      assert.equal(task.failed, true);
      assert.equal(task.failure_reason, cellDisappearedReason);
      await rep.heartbeat(presenceTtl);
      const again = await auctioneer().runOnce();
      assert.equal(again.taken, 0, 'no start request for a failed task');
    });

    it('demotes a RESOLVING task stuck past the kick interval, then deletes it after the TTL', async () => {
      await cell('cell-a');
      await bbs.desireTask(taskDefinition('t-done'));
      await auctioneer().runOnce();
      const running = await bbs.getTask({ task_guid: 't-done' });
      const completed = await bbs.completeTask({
        task_guid: 't-done',
        expected: running.modification_tag,
        cell_id: 'cell-a',
        failed: false,
        failure_reason: '',
        result: 'ok',
      });
      await bbs.resolvingTask({ task_guid: 't-done', expected: completed.modification_tag });
      const service = converger();
      clock.advance(config.taskKickIntervalMs);
      const report = await service.runOnce();
      assert.equal(report.planned['demote-resolving'], 1);
      assert.equal((await bbs.getTask({ task_guid: 't-done' })).state, 'COMPLETED');

      clock.advance(config.taskCompletedTtlMs);
      const later = await service.runOnce();
      assert.equal(later.planned['delete-task'], 1);
      await assert.rejects(bbs.getTask({ task_guid: 't-done' }), { code: 'not_found' });
    });
  });

  it('converges a lost cell at once from its own records, with the interval at an hour', async () => {
    // The wall clock: the presence watch sleeps until the expiry it read.
    const live = await openBbsStore(join(dir, 'live.sqlite3'));
    const rep = new FakeRepServer({
      bbs: live,
      cellId: 'cell-short',
      zone: 'z1',
      capacity: { memory_mb: 1024, disk_mb: 1024, containers: 100 },
    });
    await rep.listen();
    // The lapse is handled from the lost cell's records: no second read of the whole store.
    let snapshots = 0;
    const cellReads: string[] = [];
    const counting = withMethod(
      withMethod(live, 'readConvergenceSnapshot', () => {
        snapshots++;
        return live.readConvergenceSnapshot();
      }),
      'listActualLRPs',
      (req: ActualLRPFilter = {}) => {
        cellReads.push(req.cell_id ?? 'all');
        return live.listActualLRPs(req);
      },
    );
    const service = new ConvergerService({
      bbs: counting,
      config: { ...config, intervalMs: 3_600_000, presenceCheckGapMs: 20 },
    });
    try {
      await rep.heartbeat(400);
      await live.desireLRP(desiredDefinition('web', 2));
      await new AuctioneerService({
        bbs: live,
        repClientFor: (c) => repClientForCell(c, { timeoutMs: 2_000 }),
        config: { batchIntervalMs: 10 },
      }).runOnce();
      assert.equal(rep.instances.size, 2);
      // No more heartbeats: the first pass sees the cell live, the watch sees it go.
      service.start();
      const state = async () => (await live.getActualLRP({ process_guid: 'web', index: 0 })).instance?.state;
      for (let i = 0; i < 500 && (await state()) !== 'UNCLAIMED'; i++)
        await new Promise((r) => setTimeout(r, 10));
      assert.equal(await state(), 'UNCLAIMED');
      assert.equal(snapshots, 1, 'the start pass only');
      assert.deepEqual(cellReads, ['cell-short']);
    } finally {
      await service.stop();
      await rep.close();
      await live.close();
    }
  });

  it('converges on its interval until stopped', async () => {
    await bbs.desireLRP(desiredDefinition('gap', 2));
    const lrp = await instance('gap', 0);
    assert.ok(lrp);
    await bbs.removeActualLRP({ process_guid: 'gap', index: 0, expected: lrp.modification_tag });
    const service = converger();
    service.start();
    for (let i = 0; i < 200 && (await instance('gap', 0)) === null; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await service.stop();
    assert.equal((await instance('gap', 0))?.state, 'UNCLAIMED');
  });
});
