import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  type ActualLRP,
  type ActualLRPState,
  actualLrpStates,
  actualLrpTransitions,
  type BbsStore,
  CasConflictError,
  type DesiredLRPDefinition,
  type Task,
  type TaskState,
  taskStates,
  taskTransitions,
} from '../bbs/index.js';
import { BerthError } from '../core/index.js';
import { describeCellEventsContract } from './bbs-cell-events-contract.js';
import { describeClaimBatchContract } from './bbs-claim-batch-contract.js';
import { describeConvergenceReadContract } from './bbs-convergence-read-contract.js';
import { desiredDefinition, desiredTask, instanceNet, instanceOf, startOn } from './bbs-fixtures.js';
import { describeBbsPagingContract } from './bbs-paging-contract.js';

export { desiredDefinition };

/** A clock the suite moves forward by hand (TTLs, leases, visibility) — never backwards. */
export interface FakeClock {
  now(): Date;
  advance(ms: number): void;
}

export function fakeClock(start = Date.now()): FakeClock {
  let ms = start;
  return { now: () => new Date(ms), advance: (by) => (ms += by) };
}

export interface ContractTarget {
  readonly store: BbsStore;
  close(): Promise<void>;
  /**
   * The store is the server's API (BbsClient), which never shows a cell's rep token: reads see
   * none where the server's own store sees it.
   */
  readonly hidesRepTokens?: boolean;
}

/**
 * The BBS contract: the same cases against every implementation of BbsStore (SQLite, PostgreSQL,
 * the HTTP client). One store serves the whole suite, so every case works on its own fresh guids.
 * `open` gets the clock the store must use.
 */
export function describeBbsStoreContract(
  name: string,
  open: (clock: FakeClock) => Promise<ContractTarget>,
  skip?: string,
): void {
  describe(`BbsStore contract: ${name}`, { skip: skip ?? false }, () => {
    const clock = fakeClock();
    let target: ContractTarget;
    let store: BbsStore;
    before(async () => {
      target = await open(clock);
      store = target.store;
    });
    after(async () => {
      await target?.close();
    });

    const guid = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;
    const cell = (id: string) => ({ instance_guid: `ig-${id}`, cell_id: id });
    const net = instanceNet;

    async function desire(instances: number, extra: Partial<DesiredLRPDefinition> = {}) {
      return store.desireLRP(desiredDefinition(guid('web'), instances, extra));
    }
    const actual = (processGuid: string, index: number) => instanceOf(store, processGuid, index);
    const runningOn = (processGuid: string, index: number, cellId: string) =>
      startOn(store, processGuid, index, cellId);
    /** A rep's pass for `cellId`, sending `knownDigest` when given. */
    const cellPassFor = (cellId: string, knownDigest?: string) =>
      store.cellPass({
        cell_id: cellId,
        stop_limit: 10,
        visibility_ms: 60_000,
        ...(knownDigest ? { known_digest: knownDigest } : {}),
      });
    /** Takes and acknowledges the pending start requests of one LRP: the indices asked for. */
    async function startRequestsFor(processGuid: string): Promise<number[]> {
      const taken = await store.takeStartRequests({ limit: 10_000, visibility_ms: 0 });
      const mine = taken.filter((d) => d.request.process_guid === processGuid);
      await store.ackStartRequests({ ids: mine.flatMap((d) => d.ids) });
      return mine.flatMap((d) => d.request.indices).sort((a, b) => a - b);
    }
    async function stopRequestsFor(processGuid: string) {
      const taken = await store.takeStopRequests({ limit: 10_000, visibility_ms: 0 });
      const mine = taken.filter((d) => d.request.process_guid === processGuid);
      await store.ackStopRequests({ ids: mine.map((d) => d.id) });
      return mine;
    }
    /** Puts a fresh one-instance LRP's index 0 into `state`. */
    async function actualIn(state: ActualLRPState): Promise<ActualLRP> {
      const d = await desire(1);
      let lrp = await actual(d.process_guid, 0);
      const ref = { process_guid: d.process_guid, index: 0 };
      if (state === 'CLAIMED' || state === 'CRASHED') {
        lrp = await store.claimActualLRP({
          ...ref,
          expected: lrp.modification_tag,
          instance_key: cell('cell-a'),
        });
      }
      if (state === 'RUNNING') {
        lrp = await store.startActualLRP({
          ...ref,
          expected: lrp.modification_tag,
          instance_key: cell('cell-a'),
          net_info: net,
        });
      }
      if (state === 'CRASHED') {
        lrp = await store.crashActualLRP({
          ...ref,
          expected: lrp.modification_tag,
          instance_key: cell('cell-a'),
          state: 'CRASHED',
          crash_count: 3,
          last_crashed_at: clock.now().toISOString(),
          crash_reason: 'exit status 1',
        });
      }
      assert.equal(lrp.state, state);
      return lrp;
    }

    describe('DesiredLRPs', () => {
      it('desiring creates one UNCLAIMED ActualLRP per index and their start requests', async () => {
        const d = await desire(3);
        assert.deepEqual(d.modification_tag.index, 0);
        const actuals = await store.listActualLRPs({ process_guid: d.process_guid });
        assert.deepEqual(
          actuals.map((a) => [a.index, a.state, a.evacuating]),
          [
            [0, 'UNCLAIMED', false],
            [1, 'UNCLAIMED', false],
            [2, 'UNCLAIMED', false],
          ],
        );
        assert.deepEqual(await startRequestsFor(d.process_guid), [0, 1, 2]);
        assert.deepEqual(await store.getDesiredLRP({ process_guid: d.process_guid }), d);
      });

      it('keeps optional fields: command, monitor, env', async () => {
        const d = await desire(0, {
          command: ['/bin/sh', '-c', 'sleep 1'],
          monitor: { http: { port: 8080, path: '/healthz' } },
          env: { A: '1' },
        });
        const read = await store.getDesiredLRP({ process_guid: d.process_guid });
        assert.deepEqual(read.command, ['/bin/sh', '-c', 'sleep 1']);
        assert.deepEqual(read.monitor, { http: { port: 8080, path: '/healthz' } });
        assert.deepEqual(read.env, { A: '1' });
        assert.equal('command' in (await desire(0)), false);
      });

      it('refuses a second DesiredLRP with the same process_guid', async () => {
        const d = await desire(1);
        await assert.rejects(
          store.desireLRP(desiredDefinition(d.process_guid, 1)),
          hasCode('already_exists'),
        );
      });

      it('answers not_found for a missing DesiredLRP', async () => {
        await assert.rejects(store.getDesiredLRP({ process_guid: guid('nope') }), hasCode('not_found'));
        await assert.rejects(
          store.updateDesiredLRP({ process_guid: guid('nope'), update: { instances: 1 } }),
          hasCode('not_found'),
        );
      });

      it('updates in place with the current tag and refuses a stale one with the current record', async () => {
        const d = await desire(1);
        const updated = await store.updateDesiredLRP({
          process_guid: d.process_guid,
          expected: d.modification_tag,
          // The `http` routes are checked since issue 22: a hostname to a port the LRP exposes.
          update: { annotation: 'v2', routes: { http: [{ hostname: 'a.example', port: 8080 }] } },
        });
        assert.equal(updated.annotation, 'v2');
        assert.deepEqual(updated.routes, { http: [{ hostname: 'a.example', port: 8080 }] });
        assert.deepEqual(updated.modification_tag, { epoch: d.modification_tag.epoch, index: 1 });
        await assert.rejects(
          store.updateDesiredLRP({
            process_guid: d.process_guid,
            expected: d.modification_tag,
            update: { annotation: 'x' },
          }),
          (err: unknown) => {
            assert.ok(err instanceof CasConflictError);
            assert.equal(err.code, 'cas_conflict');
            assert.deepEqual(
              (err.details.current as { modification_tag: unknown }).modification_tag,
              updated.modification_tag,
            );
            return true;
          },
        );
      });

      it('scaling up creates the missing indices with start requests', async () => {
        const d = await desire(1);
        await startRequestsFor(d.process_guid);
        await store.updateDesiredLRP({ process_guid: d.process_guid, update: { instances: 3 } });
        const indices = (await store.listActualLRPs({ process_guid: d.process_guid })).map((a) => a.index);
        assert.deepEqual(indices, [0, 1, 2]);
        assert.deepEqual(await startRequestsFor(d.process_guid), [1, 2]);
      });

      it('a cell pass takes the cell’s stop requests once, then lists its ActualLRPs and tasks, none of another cell’s', async () => {
        const d = await desire(2);
        const ids = [`pass-a-${randomUUID()}`, `pass-b-${randomUUID()}`] as const;
        for (const [index, id] of ids.entries()) await runningOn(d.process_guid, index, id);
        const t = await store.desireTask(desiredTask(`pass-task-${randomUUID()}`));
        await store.startTask({ task_guid: t.task_guid, expected: t.modification_tag, cell_id: ids[0] });
        // Scaling down asks the second cell to stop index 1.
        await store.updateDesiredLRP({ process_guid: d.process_guid, update: { instances: 1 } });

        const pass = (cellId: string) => cellPassFor(cellId);
        const b = await pass(ids[1]);
        assert.deepEqual(
          b.stops.map((s) => [s.kind, s.request.process_guid, s.request.index, s.request.instance_guid]),
          [['lrp', d.process_guid, 1, `ig-${ids[1]}`]],
        );
        assert.deepEqual(
          b.actual_lrps.map((a) => [a.index, a.cell_id]),
          [[1, ids[1]]],
        );
        assert.deepEqual(b.tasks, []);
        assert.deepEqual((await pass(ids[1])).stops, [], 'a taken stop is hidden until its visibility ends');

        const a = await pass(ids[0]);
        assert.deepEqual(a.stops, []);
        assert.deepEqual(
          a.actual_lrps.map((x) => [x.index, x.cell_id, x.state]),
          [[0, ids[0], 'RUNNING']],
        );
        assert.deepEqual(
          a.tasks.map((x) => [x.task_guid, x.state]),
          [[t.task_guid, 'RUNNING']],
        );
        await assert.rejects(
          store.cellPass({ cell_id: '', stop_limit: 10, visibility_ms: 0 }),
          hasCode('invalid_argument'),
        );
      });

      it('a cell pass sent the digest it gave answers "unchanged" until one of the cell’s records moves', async () => {
        const d = await desire(2);
        const id = `digest-${randomUUID()}`;
        const other = `digest-other-${randomUUID()}`;
        const mine = await runningOn(d.process_guid, 0, id);
        const theirs = await runningOn(d.process_guid, 1, other);
        const remove = (lrp: ActualLRP) =>
          store.removeActualLRP({
            process_guid: lrp.process_guid,
            index: lrp.index,
            expected: lrp.modification_tag,
          });
        const t = await store.desireTask(desiredTask(`digest-task-${randomUUID()}`));
        const running = await store.startTask({
          task_guid: t.task_guid,
          expected: t.modification_tag,
          cell_id: id,
        });
        const pass = (knownDigest?: string) => cellPassFor(id, knownDigest);

        const whole = await pass();
        assert.equal(whole.unchanged, undefined);
        assert.equal(whole.actual_lrps.length, 1);
        assert.equal(whole.tasks.length, 1);
        const same = await pass(whole.digest);
        assert.equal(same.unchanged, true);
        assert.deepEqual([same.actual_lrps, same.tasks, same.digest], [[], [], whole.digest]);

        // Another cell's record moving changes nothing here.
        await remove(theirs);
        assert.equal((await pass(whole.digest)).unchanged, true);

        // Its task moving does: the answer is whole again, with a new digest.
        await store.completeTask({
          task_guid: t.task_guid,
          expected: running.modification_tag,
          cell_id: id,
          failed: false,
          failure_reason: '',
          result: 'done',
        });
        const afterTask = await pass(whole.digest);
        assert.equal(afterTask.unchanged, undefined);
        assert.notEqual(afterTask.digest, whole.digest);
        assert.deepEqual(
          afterTask.tasks.map((x) => x.state),
          ['COMPLETED'],
        );

        // So does its instance going, and a digest from elsewhere is only a mismatch.
        await remove(mine);
        const gone = await pass(afterTask.digest);
        assert.equal(gone.unchanged, undefined);
        assert.deepEqual(gone.actual_lrps, []);
        assert.equal((await pass('not-a-digest-of-anything')).unchanged, undefined);
      });

      it('a cell pass sent its digest still takes a stop request waiting for the cell, though no record moved', async () => {
        const d = await desire(2);
        const id = `digest-stop-${randomUUID()}`;
        await runningOn(d.process_guid, 0, id);
        await runningOn(d.process_guid, 1, id);
        const pass = (knownDigest?: string) => cellPassFor(id, knownDigest);
        const whole = await pass();
        assert.equal((await pass(whole.digest)).unchanged, true);
        // Scaling down asks the cell to stop index 1 and leaves its record as it is.
        await store.updateDesiredLRP({ process_guid: d.process_guid, update: { instances: 1 } });
        const withStop = await pass(whole.digest);
        assert.equal(withStop.digest, whole.digest, 'no record of the cell moved');
        assert.equal(withStop.unchanged, undefined);
        assert.deepEqual(
          withStop.stops.map((x) => [x.request.process_guid, x.request.index, x.request.cell_id]),
          [[d.process_guid, 1, id]],
        );
        assert.equal(withStop.actual_lrps.length, 2);
        // Taken, the stop is hidden until its visibility ends: the next pass is unchanged again.
        assert.equal((await pass(whole.digest)).unchanged, true);
      });

      it('scaling down deletes UNCLAIMED/CRASHED extras and asks cells to stop CLAIMED/RUNNING ones', async () => {
        const d = await desire(4);
        const ref = (index: number) => ({ process_guid: d.process_guid, index });
        const a1 = await actual(d.process_guid, 1);
        await store.claimActualLRP({
          ...ref(1),
          expected: a1.modification_tag,
          instance_key: cell('cell-a'),
        });
        await runningOn(d.process_guid, 2, 'cell-b');
        await stopRequestsFor(d.process_guid);
        await store.updateDesiredLRP({ process_guid: d.process_guid, update: { instances: 1 } });
        const left = await store.listActualLRPs({ process_guid: d.process_guid });
        assert.deepEqual(
          left.map((a) => [a.index, a.state]),
          [
            [0, 'UNCLAIMED'],
            [1, 'CLAIMED'],
            [2, 'RUNNING'],
          ],
        );
        const stops = await stopRequestsFor(d.process_guid);
        assert.deepEqual(stops.map((s) => [s.request.index, s.request.cell_id]).sort(), [
          [1, 'cell-a'],
          [2, 'cell-b'],
        ]);
        assert.deepEqual(await startRequestsFor(d.process_guid), [0]);
      });

      it('removing a DesiredLRP retires all its instances', async () => {
        const d = await desire(2);
        await runningOn(d.process_guid, 0, 'cell-a');
        await store.removeDesiredLRP({ process_guid: d.process_guid });
        await assert.rejects(store.getDesiredLRP({ process_guid: d.process_guid }), hasCode('not_found'));
        const left = await store.listActualLRPs({ process_guid: d.process_guid });
        assert.deepEqual(
          left.map((a) => [a.index, a.state]),
          [[0, 'RUNNING']],
        );
        assert.deepEqual(
          (await stopRequestsFor(d.process_guid)).map((s) => s.request.index),
          [0],
        );
        assert.deepEqual(await startRequestsFor(d.process_guid), []);
      });

      it('removing with a stale tag is a CAS conflict and removes nothing', async () => {
        const d = await desire(1);
        await store.updateDesiredLRP({ process_guid: d.process_guid, update: { annotation: 'x' } });
        await assert.rejects(
          store.removeDesiredLRP({ process_guid: d.process_guid, expected: d.modification_tag }),
          hasCode('cas_conflict'),
        );
        assert.equal((await store.listActualLRPs({ process_guid: d.process_guid })).length, 1);
      });

      it('lists by domain', async () => {
        const domain = guid('dom');
        const d = await desire(0, { domain });
        assert.deepEqual(
          (await store.listDesiredLRPs({ domain })).map((x) => x.process_guid),
          [d.process_guid],
        );
      });
    });

    describe('ActualLRP actions', () => {
      it('claim with a stale tag is a CAS conflict carrying the current record; missing is not_found', async () => {
        const lrp = await actualIn('UNCLAIMED');
        const ref = { process_guid: lrp.process_guid, index: 0 };
        const claimed = await store.claimActualLRP({
          ...ref,
          expected: lrp.modification_tag,
          instance_key: cell('a'),
        });
        await assert.rejects(
          store.claimActualLRP({ ...ref, expected: lrp.modification_tag, instance_key: cell('b') }),
          (err: unknown) => err instanceof CasConflictError && sameTag(err.current, claimed),
        );
        await assert.rejects(
          store.claimActualLRP({ ...ref, index: 7, expected: lrp.modification_tag, instance_key: cell('b') }),
          hasCode('not_found'),
        );
      });

      it('a crash below the restart threshold goes UNCLAIMED and requests a start', async () => {
        const lrp = await actualIn('RUNNING');
        await startRequestsFor(lrp.process_guid);
        const crashed = await store.crashActualLRP({
          process_guid: lrp.process_guid,
          index: 0,
          expected: lrp.modification_tag,
          instance_key: cell('cell-a'),
          state: 'UNCLAIMED',
          crash_count: 1,
          last_crashed_at: '2026-01-01T00:00:00.000Z',
          crash_reason: 'exit status 2',
        });
        assert.equal(crashed.state, 'UNCLAIMED');
        assert.equal(crashed.crash_count, 1);
        assert.equal(crashed.cell_id, '');
        assert.deepEqual(crashed.ports, []);
        assert.deepEqual(await startRequestsFor(lrp.process_guid), [0]);
      });

      it('a CRASHED instance requests no start; only its owner may crash it', async () => {
        const lrp = await actualIn('RUNNING');
        await startRequestsFor(lrp.process_guid);
        const crash = {
          process_guid: lrp.process_guid,
          index: 0,
          expected: lrp.modification_tag,
          state: 'CRASHED' as const,
          crash_count: 3,
          last_crashed_at: clock.now().toISOString(),
          crash_reason: 'oom',
        };
        await assert.rejects(
          store.crashActualLRP({ ...crash, instance_key: cell('cell-other') }),
          hasCode('conflict'),
        );
        const crashed = await store.crashActualLRP({ ...crash, instance_key: cell('cell-a') });
        assert.equal(crashed.state, 'CRASHED');
        assert.deepEqual(await startRequestsFor(lrp.process_guid), []);
      });

      it('records a placement failure on an UNCLAIMED instance only', async () => {
        const lrp = await actualIn('UNCLAIMED');
        const failed = await store.failActualLRP({
          process_guid: lrp.process_guid,
          index: 0,
          expected: lrp.modification_tag,
          placement_error: 'insufficient resources: memory',
        });
        assert.equal(failed.placement_error, 'insufficient resources: memory');
        const running = await actualIn('RUNNING');
        await assert.rejects(
          store.failActualLRP({
            process_guid: running.process_guid,
            index: 0,
            expected: running.modification_tag,
            placement_error: 'x',
          }),
          hasCode('conflict'),
        );
      });

      it('the claimant can give a CLAIMED instance back unplaceable: UNCLAIMED, the error, no start request', async () => {
        const lrp = await actualIn('CLAIMED');
        const fail = {
          process_guid: lrp.process_guid,
          index: 0,
          expected: lrp.modification_tag,
          placement_error: 'cannot get image "nowhere/none:1"',
        };
        await assert.rejects(
          store.failActualLRP({ ...fail, instance_key: { instance_guid: 'other', cell_id: 'cell-x' } }),
          hasCode('conflict'),
        );
        await startRequestsFor(lrp.process_guid); // drains the desire's own request
        const failed = await store.failActualLRP({
          ...fail,
          instance_key: { instance_guid: lrp.instance_guid, cell_id: lrp.cell_id },
        });
        assert.equal(failed.state, 'UNCLAIMED');
        assert.equal(failed.cell_id, '');
        assert.equal(failed.placement_error, 'cannot get image "nowhere/none:1"');
        assert.deepEqual(await startRequestsFor(lrp.process_guid), [], 'no new start request');
        await assert.rejects(
          store.failActualLRP({ ...fail, expected: lrp.modification_tag }),
          hasCode('cas_conflict'),
        );
      });

      it('start with expected null creates a RUNNING record, and conflicts when one exists', async () => {
        const processGuid = guid('orphan');
        const created = await store.startActualLRP({
          process_guid: processGuid,
          index: 0,
          domain: 'd',
          expected: null,
          instance_key: cell('cell-a'),
          net_info: net,
        });
        assert.equal(created.state, 'RUNNING');
        assert.deepEqual(created.ports, net.ports);
        await assert.rejects(
          store.startActualLRP({
            process_guid: processGuid,
            index: 0,
            domain: 'd',
            expected: null,
            instance_key: cell('cell-a'),
            net_info: net,
          }),
          hasCode('cas_conflict'),
        );
      });

      it('remove is a compare-and-delete that checks the owner when given', async () => {
        const lrp = await actualIn('RUNNING');
        const ref = { process_guid: lrp.process_guid, index: 0, expected: lrp.modification_tag };
        await assert.rejects(
          store.removeActualLRP({ ...ref, instance_key: cell('cell-z') }),
          hasCode('conflict'),
        );
        await store.removeActualLRP({ ...ref, instance_key: cell('cell-a') });
        await assert.rejects(
          store.getActualLRP({ process_guid: lrp.process_guid, index: 0 }),
          hasCode('not_found'),
        );
      });

      it('retire deletes UNCLAIMED and asks the cell to stop RUNNING', async () => {
        const unclaimed = await actualIn('UNCLAIMED');
        const r1 = await store.retireActualLRP({
          process_guid: unclaimed.process_guid,
          index: 0,
          expected: unclaimed.modification_tag,
        });
        assert.deepEqual(r1, { removed: true, stop_request: null });
        const running = await actualIn('RUNNING');
        const r2 = await store.retireActualLRP({
          process_guid: running.process_guid,
          index: 0,
          expected: running.modification_tag,
        });
        assert.equal(r2.removed, false);
        assert.equal(r2.stop_request?.cell_id, 'cell-a');
      });

      it('unclaim returns an instance to UNCLAIMED and requests a start', async () => {
        const lrp = await actualIn('CLAIMED');
        await startRequestsFor(lrp.process_guid);
        const u = await store.unclaimActualLRP({
          process_guid: lrp.process_guid,
          index: 0,
          expected: lrp.modification_tag,
        });
        assert.equal(u.state, 'UNCLAIMED');
        assert.equal(u.cell_id, '');
        assert.deepEqual(await startRequestsFor(lrp.process_guid), [0]);
      });

      it('evacuates a RUNNING instance beside itself and removes the evacuating copy', async () => {
        const lrp = await actualIn('RUNNING');
        await startRequestsFor(lrp.process_guid);
        const group = await store.evacuateRunningActualLRP({
          process_guid: lrp.process_guid,
          index: 0,
          expected: lrp.modification_tag,
          instance_key: cell('cell-a'),
          net_info: net,
        });
        assert.equal(group.instance?.state, 'UNCLAIMED');
        assert.equal(group.evacuating?.state, 'RUNNING');
        assert.equal(group.evacuating?.evacuating, true);
        assert.equal(group.evacuating?.cell_id, 'cell-a');
        assert.deepEqual(await startRequestsFor(lrp.process_guid), [0]);
        const listed = await store.listActualLRPs({ process_guid: lrp.process_guid });
        assert.deepEqual(
          listed.map((a) => [a.state, a.evacuating]),
          [
            ['UNCLAIMED', false],
            ['RUNNING', true],
          ],
        );
        const read = await store.getActualLRP({ process_guid: lrp.process_guid, index: 0 });
        assert.ok(read.evacuating);
        await store.removeEvacuatingActualLRP({
          process_guid: lrp.process_guid,
          index: 0,
          expected: read.evacuating.modification_tag,
          instance_key: cell('cell-a'),
        });
        const after = await store.getActualLRP({ process_guid: lrp.process_guid, index: 0 });
        assert.equal(after.evacuating, null);
      });

      it('createActualLRP fills a missing desired index and refuses an existing one', async () => {
        const d = await desire(2);
        const a1 = await actual(d.process_guid, 1);
        await store.retireActualLRP({
          process_guid: d.process_guid,
          index: 1,
          expected: a1.modification_tag,
        });
        await startRequestsFor(d.process_guid);
        const created = await store.createActualLRP({ process_guid: d.process_guid, index: 1 });
        assert.equal(created.state, 'UNCLAIMED');
        assert.notEqual(created.modification_tag.epoch, a1.modification_tag.epoch);
        assert.deepEqual(await startRequestsFor(d.process_guid), [1]);
        await assert.rejects(
          store.createActualLRP({ process_guid: d.process_guid, index: 1 }),
          hasCode('already_exists'),
        );
        await assert.rejects(
          store.createActualLRP({ process_guid: d.process_guid, index: 2 }),
          hasCode('invalid_argument'),
        );
      });
    });

    describe('ActualLRP transition table, enforced by the store', () => {
      for (const from of actualLrpStates) {
        for (const to of actualLrpStates) {
          const allowed = actualLrpTransitions[from].includes(to);
          it(`${from} → ${to} is ${allowed ? 'allowed' : 'refused'}`, async () => {
            const lrp = await actualIn(from);
            const base = { process_guid: lrp.process_guid, index: 0, expected: lrp.modification_tag };
            const owner = cell('cell-a');
            const move = (): Promise<ActualLRP> => {
              switch (to) {
                case 'UNCLAIMED':
                  return store.unclaimActualLRP(base);
                case 'CLAIMED':
                  return store.claimActualLRP({ ...base, instance_key: owner });
                case 'RUNNING':
                  return store.startActualLRP({ ...base, instance_key: owner, net_info: net });
                case 'CRASHED':
                  return store.crashActualLRP({
                    ...base,
                    instance_key: owner,
                    state: 'CRASHED',
                    crash_count: 4,
                    last_crashed_at: clock.now().toISOString(),
                    crash_reason: 'exit status 1',
                  });
              }
            };
            if (allowed) {
              const moved = await move();
              assert.equal(moved.state, to);
              assert.equal(moved.modification_tag.index, lrp.modification_tag.index + 1);
            } else {
              await assert.rejects(move(), (err: unknown) => {
                assert.ok(err instanceof BerthError);
                assert.equal(err.code, 'illegal_transition');
                assert.deepEqual([err.details.from, err.details.to], [from, to]);
                return true;
              });
              assert.deepEqual(await actual(lrp.process_guid, 0), lrp);
            }
          });
        }
      }
    });

    describe('Tasks', () => {
      const task = (extra: Partial<Task> = {}) => desiredTask(guid('task'), extra);

      async function taskIn(state: TaskState): Promise<Task> {
        let t = await store.desireTask(task());
        const g = { task_guid: t.task_guid };
        if (state !== 'PENDING')
          t = await store.startTask({ ...g, expected: t.modification_tag, cell_id: 'cell-a' });
        if (state === 'COMPLETED' || state === 'RESOLVING') {
          t = await store.completeTask({
            ...g,
            expected: t.modification_tag,
            cell_id: 'cell-a',
            failed: false,
            failure_reason: '',
            result: 'ok',
          });
        }
        if (state === 'RESOLVING') t = await store.resolvingTask({ ...g, expected: t.modification_tag });
        assert.equal(t.state, state);
        return t;
      }

      it('runs the happy path PENDING → RUNNING → COMPLETED → RESOLVING → deleted', async () => {
        const t = await taskIn('RESOLVING');
        assert.equal(t.result, 'ok');
        assert.ok(t.first_completed_at);
        await store.deleteTask({ task_guid: t.task_guid, expected: t.modification_tag });
        await assert.rejects(store.getTask({ task_guid: t.task_guid }), hasCode('not_found'));
      });

      it('desiring a task records a task start request; a duplicate is refused', async () => {
        const t = await store.desireTask(task({ memory_mb: 99 }));
        const taken = await store.takeTaskStartRequests({ limit: 10_000, visibility_ms: 60_000 });
        const mine = taken.filter((d) => d.request.task_guid === t.task_guid);
        assert.equal(mine.length, 1);
        assert.equal(mine[0]?.request.memory_mb, 99);
        await store.ackTaskStartRequests({ ids: mine.map((d) => d.id) });
        await assert.rejects(store.desireTask(task({ task_guid: t.task_guid })), hasCode('already_exists'));
      });

      it('desiring one task guid from many callers at once: one wins, every other is already_exists', async () => {
        // On PostgreSQL the losers' reads see no row (nothing to lock yet) and their inserts hit the
        // unique key: that collision must be the same already_exists as the read's.
        const taskGuid = guid('task-race');
        // Connections opened first, so the desires overlap instead of queueing behind a connect.
        await Promise.all(Array.from({ length: 8 }, () => store.listTasks({ limit: 1 })));
        const outcomes = await Promise.allSettled(
          Array.from({ length: 8 }, () => store.desireTask(task({ task_guid: taskGuid }))),
        );
        assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
        for (const o of outcomes) {
          if (o.status === 'rejected')
            assert.equal((o.reason as BerthError).code, 'already_exists', String(o.reason));
        }
      });

      it('only the running cell completes a task', async () => {
        const t = await taskIn('RUNNING');
        await assert.rejects(
          store.completeTask({
            task_guid: t.task_guid,
            expected: t.modification_tag,
            cell_id: 'cell-b',
            failed: false,
            failure_reason: '',
            result: '',
          }),
          hasCode('conflict'),
        );
      });

      it('cancelling a RUNNING task completes it failed and asks its cell to stop it', async () => {
        const t = await taskIn('RUNNING');
        const cancelled = await store.cancelTask({ task_guid: t.task_guid });
        assert.equal(cancelled.state, 'COMPLETED');
        assert.equal(cancelled.failed, true);
        assert.equal(cancelled.failure_reason, 'task was cancelled');
        const stops = await store.takeStopRequests({ cell_id: 'cell-a', limit: 10_000, visibility_ms: 0 });
        assert.ok(stops.some((s) => s.kind === 'task' && s.request.process_guid === t.task_guid));
      });

      it('a PENDING or RUNNING task cannot be deleted', async () => {
        const t = await taskIn('RUNNING');
        await assert.rejects(
          store.deleteTask({ task_guid: t.task_guid, expected: t.modification_tag }),
          hasCode('illegal_transition'),
        );
      });

      it('lists tasks by state and cell', async () => {
        const t = await taskIn('RUNNING');
        const running = await store.listTasks({ state: 'RUNNING', cell_id: 'cell-a' });
        assert.ok(running.some((x) => x.task_guid === t.task_guid));
        assert.ok(running.every((x) => x.state === 'RUNNING'));
      });

      describe('transition table, enforced by the store', () => {
        for (const from of taskStates) {
          for (const to of taskStates) {
            const allowed = taskTransitions[from].includes(to);
            it(`${from} → ${to} is ${allowed ? 'allowed' : 'refused'}`, async () => {
              const t = await taskIn(from);
              const base = { task_guid: t.task_guid, expected: t.modification_tag };
              const move = (): Promise<Task> | undefined => {
                switch (to) {
                  case 'PENDING':
                    return undefined; // no operation can put a task back in the queue
                  case 'RUNNING':
                    return store.startTask({ ...base, cell_id: 'cell-a' });
                  case 'COMPLETED':
                    if (from === 'RESOLVING') return store.demoteResolvingTask(base);
                    if (from === 'RUNNING') {
                      return store.completeTask({
                        ...base,
                        cell_id: 'cell-a',
                        failed: true,
                        failure_reason: 'exit status 1',
                        result: '',
                      });
                    }
                    return store.failTask({ ...base, failure_reason: 'no cell has room' });
                  case 'RESOLVING':
                    return store.resolvingTask(base);
                }
              };
              const attempt = move();
              if (attempt === undefined) {
                assert.equal(allowed, false);
                return;
              }
              if (allowed) {
                assert.equal((await attempt).state, to);
              } else {
                await assert.rejects(attempt, hasCode('illegal_transition'));
                assert.deepEqual(await store.getTask({ task_guid: t.task_guid }), t);
              }
            });
          }
        }
      });
    });

    describe('domains, cells, leases, outboxes', () => {
      it('a domain is fresh until its TTL passes', async () => {
        const domain = guid('dom');
        await store.upsertDomain({ domain, ttl_ms: 1000 });
        assert.ok((await store.listDomains()).some((d) => d.domain === domain));
        clock.advance(1001);
        assert.ok(!(await store.listDomains()).some((d) => d.domain === domain));
      });

      it('a domain names its owning system: claimed by an upsert with an owner, kept by one without', async () => {
        const domain = guid('system');
        const other = guid('plain');
        await store.upsertDomain({ domain: other, ttl_ms: 0 });
        const claimed = await store.upsertDomain({ domain, ttl_ms: 0, owner: 'shop' });
        assert.equal(claimed.owner, 'shop');
        // A plain upsert (`berth lrp desire`, PUT /v1/domains) renews it and never frees it.
        assert.equal((await store.upsertDomain({ domain, ttl_ms: 0 })).owner, 'shop');
        const listed = await store.listDomains();
        assert.equal(listed.find((d) => d.domain === domain)?.owner, 'shop');
        assert.equal(listed.find((d) => d.domain === other)?.owner, undefined);
        const lrp = await desire(1, { domain });
        const t = await store.desireTask(desiredTask(guid('task'), { domain }));
        const plainLrp = await desire(1, { domain: other });
        assert.deepEqual(await store.ownerOf({ domain }), { owner: 'shop' });
        assert.deepEqual(await store.ownerOf({ process_guid: lrp.process_guid }), { owner: 'shop' });
        assert.deepEqual(await store.ownerOf({ task_guid: t.task_guid }), { owner: 'shop' });
        assert.deepEqual(await store.ownerOf({ process_guid: plainLrp.process_guid }), { owner: null });
        assert.deepEqual(await store.ownerOf({ domain: other }), { owner: null });
        assert.deepEqual(await store.ownerOf({ process_guid: guid('missing') }), { owner: null });
        // An LRP in a domain with no row (desired without an upsert) is nobody's.
        const bare = await desire(1, { domain: guid('bare') });
        assert.deepEqual(await store.ownerOf({ process_guid: bare.process_guid }), { owner: null });
      });

      it('a cell is live until its presence expires; a heartbeat renews it', async () => {
        const cellId = guid('cell');
        const presence = {
          cell_id: cellId,
          zone: 'z1',
          capacity: { memory_mb: 1024, disk_mb: 2048, containers: 10 },
          rep_url: 'http://127.0.0.1:1800',
          placement_tags: ['ssd'],
        };
        await store.heartbeatCell({ presence, ttl_ms: 1000 });
        clock.advance(600);
        await store.heartbeatCell({ presence, ttl_ms: 1000 });
        clock.advance(600);
        const live = (await store.listCells()).find((c) => c.cell_id === cellId);
        assert.deepEqual(live?.capacity, presence.capacity);
        assert.deepEqual(live?.placement_tags, ['ssd']);
        assert.equal(live?.model_agent, false, 'a presence without model_agent does not run the agents');
        await store.heartbeatCell({ presence: { ...presence, model_agent: true }, ttl_ms: 1000 });
        const agent = (await store.listCells()).find((c) => c.cell_id === cellId);
        assert.equal(agent?.model_agent, true);
        clock.advance(1000);
        assert.ok(!(await store.listCells()).some((c) => c.cell_id === cellId));
      });

      it("a cell's rep token is kept for the server's readers, and a cell without one has none", async () => {
        const cellId = guid('cell');
        const presence = {
          cell_id: cellId,
          zone: 'z1',
          capacity: { memory_mb: 1024, disk_mb: 2048, containers: 10 },
          rep_url: 'http://127.0.0.1:1801',
          placement_tags: [],
        };
        await store.heartbeatCell({ presence, ttl_ms: 10_000 });
        assert.equal((await store.listCells()).find((c) => c.cell_id === cellId)?.rep_token, undefined);
        const token = 'r'.repeat(43);
        const seen = target.hidesRepTokens ? undefined : token;
        const registered = await store.heartbeatCell({
          presence: { ...presence, rep_token: token },
          ttl_ms: 10_000,
        });
        assert.equal(registered.rep_token, seen);
        assert.equal((await store.listCells()).find((c) => c.cell_id === cellId)?.rep_token, seen);
        const full = await store.readSnapshot();
        assert.equal(full.cells.find((c) => c.cell_id === cellId)?.rep_token, seen);
        const convergence = await store.readConvergenceSnapshot();
        assert.equal(convergence.cells.find((c) => c.cell_id === cellId)?.rep_token, seen);
        await store.removeCell({ cell_id: cellId });
      });

      it('a lease has one holder until it expires; a handover increments the fencing token', async () => {
        const name = guid('lease');
        const a = await store.acquireLease({ name, holder: 'a', ttl_ms: 1000 });
        assert.equal(a.acquired, true);
        const b = await store.acquireLease({ name, holder: 'b', ttl_ms: 1000 });
        assert.equal(b.acquired, false);
        assert.equal(b.lease.holder, 'a');
        const renewed = await store.acquireLease({ name, holder: 'a', ttl_ms: 1000 });
        assert.equal(renewed.lease.token, a.lease.token);
        clock.advance(1001);
        const taken = await store.acquireLease({ name, holder: 'b', ttl_ms: 1000 });
        assert.equal(taken.acquired, true);
        assert.equal(taken.lease.token, a.lease.token + 1);
        await store.releaseLease({ name, holder: 'b' });
        assert.equal((await store.acquireLease({ name, holder: 'a', ttl_ms: 1000 })).acquired, true);
      });

      it('a taken start request comes back after its visibility timeout unless acknowledged', async () => {
        const d = await desire(2);
        const mine = async (visibility: number) =>
          (await store.takeStartRequests({ limit: 10_000, visibility_ms: visibility })).filter(
            (x) => x.request.process_guid === d.process_guid,
          );
        const first = await mine(5000);
        assert.deepEqual(first[0]?.request.indices, [0, 1]);
        assert.deepEqual(await mine(5000), []);
        clock.advance(5001);
        const again = await mine(5000);
        assert.deepEqual(again[0]?.request.indices, [0, 1]);
        await store.ackStartRequests({ ids: again.flatMap((x) => x.ids) });
        clock.advance(5001);
        assert.deepEqual(await mine(5000), []);
      });

      it('the convergence snapshot names the instances whose start request is queued or taken, not acked', async () => {
        const d = await desire(3);
        const queued = async () =>
          (await store.readConvergenceSnapshot()).queued_lrp_starts
            .filter((q) => q.process_guid === d.process_guid)
            .map((q) => q.index)
            .sort((a, b) => a - b);
        assert.deepEqual(await queued(), [0, 1, 2]);
        const taken = (await store.takeStartRequests({ limit: 10_000, visibility_ms: 5000 })).filter(
          (x) => x.request.process_guid === d.process_guid,
        );
        assert.deepEqual(await queued(), [0, 1, 2], 'taken and held: still queued');
        await store.ackStartRequests({ ids: taken.flatMap((x) => x.ids) });
        assert.deepEqual(await queued(), []);
      });
    });

    describe('events and reads', () => {
      it('names the newest event as the head: after it, only what is written from then on', async () => {
        await desire(1);
        const head = await store.headEventId();
        assert.equal(head, await lastEventId(store));
        assert.deepEqual(await store.readEvents({ after: head }), []);
        const d = await desire(1);
        const next = await store.readEvents({ after: head });
        assert.ok(next.length > 0);
        assert.ok(next.every((e) => JSON.stringify(e).includes(d.process_guid)));
        assert.equal(await store.headEventId(), next.at(-1)?.id);
      });

      it('records every change as an ordered event and resumes after a given id', async () => {
        const start = await lastEventId(store);
        const d = await desire(1);
        const a = await actual(d.process_guid, 0);
        await store.claimActualLRP({
          process_guid: d.process_guid,
          index: 0,
          expected: a.modification_tag,
          instance_key: cell('c'),
        });
        await store.removeDesiredLRP({ process_guid: d.process_guid });
        const events = (await readAll(store, start)).filter((e) =>
          JSON.stringify(e).includes(d.process_guid),
        );
        assert.deepEqual(
          events.map((e) => e.type),
          ['desired_lrp_created', 'actual_lrp_created', 'actual_lrp_changed', 'desired_lrp_removed'],
        );
        const changed = events[2];
        assert.ok(changed?.type === 'actual_lrp_changed');
        assert.equal(changed.before.state, 'UNCLAIMED');
        assert.equal(changed.after.state, 'CLAIMED');
        const resumed = (await readAll(store, events[1]?.id)).filter((e) =>
          JSON.stringify(e).includes(d.process_guid),
        );
        assert.deepEqual(
          resumed.map((e) => e.type),
          ['actual_lrp_changed', 'desired_lrp_removed'],
        );
      });

      it('a failed CAS writes no event', async () => {
        const lrp = await actualIn('RUNNING');
        const start = await lastEventId(store);
        await assert.rejects(
          store.claimActualLRP({
            process_guid: lrp.process_guid,
            index: 0,
            expected: lrp.modification_tag,
            instance_key: cell('x'),
          }),
        );
        const events = (await readAll(store, start)).filter((e) =>
          JSON.stringify(e).includes(lrp.process_guid),
        );
        assert.deepEqual(events, []);
      });

      it('reads one snapshot of desired and actual state and counts records per state', async () => {
        const d = await desire(2);
        const snapshot = await store.readSnapshot();
        assert.ok(snapshot.desired_lrps.some((x) => x.process_guid === d.process_guid));
        assert.equal(snapshot.actual_lrps.filter((x) => x.process_guid === d.process_guid).length, 2);
        // The converger's read: these UNCLAIMED ones listed (convergence-read contract), without
        // what convergence never reads.
        const converge = await store.readConvergenceSnapshot();
        assert.deepEqual(
          converge.actual_lrps.filter((x) => x.process_guid === d.process_guid),
          snapshot.actual_lrps
            .filter((x) => x.process_guid === d.process_guid)
            .map(({ crash_reason, placement_error, address, ports, ...rest }) => rest),
        );
        const counts = await store.countRecords();
        assert.ok(counts.actual_lrps.UNCLAIMED >= 2);
        assert.ok(counts.desired_lrps >= 1);
      });
    });

    describe('paging', () => describeBbsPagingContract(() => store));
    describe('cell events', () => describeCellEventsContract(() => store, clock));
    describe('batch claims', () => describeClaimBatchContract(() => store));
    describe('convergence read', () => describeConvergenceReadContract(() => store));
  });
}

function hasCode(code: string) {
  return (err: unknown) => {
    assert.ok(err instanceof BerthError, `expected a BerthError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  };
}

function sameTag(current: unknown, record: { modification_tag: unknown }): boolean {
  return (
    JSON.stringify((current as { modification_tag: unknown }).modification_tag) ===
    JSON.stringify(record.modification_tag)
  );
}

async function lastEventId(store: BbsStore): Promise<string | undefined> {
  const all = await readAll(store, undefined);
  return all.at(-1)?.id;
}

async function readAll(store: BbsStore, after: string | undefined) {
  const out = [];
  let cursor = after;
  for (;;) {
    const batch = await store.readEvents({ ...(cursor !== undefined ? { after: cursor } : {}), limit: 5000 });
    out.push(...batch);
    if (batch.length < 5000) return out;
    cursor = batch.at(-1)?.id;
  }
}
