import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import type { BbsStore } from '../bbs/index.js';
import { desiredDefinition, instanceOf, startOn } from './bbs-fixtures.js';
import { splitSettled } from './settled-instances-oracle.js';

/**
 * The converger's read (`readConvergenceSnapshot`), part of the BBS contract: the settled
 * instances left out and counted per LRP, everything else listed, as the definition
 * (`splitSettled`) says over the whole store. Each case desires its own LRPs on the shared store.
 */
export function describeConvergenceReadContract(storeOf: () => BbsStore): void {
  const guid = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

  const actual = (processGuid: string, index: number) => instanceOf(storeOf(), processGuid, index);
  const runningOn = (processGuid: string, index: number, cellId: string) =>
    startOn(storeOf(), processGuid, index, cellId);
  async function desire(instances: number, onCell?: string): Promise<string> {
    const d = await storeOf().desireLRP(desiredDefinition(guid('conv'), instances));
    if (onCell) for (let i = 0; i < instances; i++) await runningOn(d.process_guid, i, onCell);
    return d.process_guid;
  }

  it('leaves out settled instances, counted per LRP, and lists every other record', async () => {
    const store = storeOf();
    const live = guid('cell');
    const gone = guid('cell'); // never present
    await store.heartbeatCell({
      presence: {
        cell_id: live,
        zone: 'z1',
        capacity: { memory_mb: 1024, disk_mb: 2048, containers: 10 },
        rep_url: 'http://127.0.0.1:1802',
        placement_tags: [],
      },
      ttl_ms: 600_000,
    });
    const whole = await desire(2, live);
    // RUNNING, CLAIMED and UNCLAIMED: the first two settled, the last listed.
    const mixed = await desire(3);
    await runningOn(mixed, 0, live);
    const toClaim = await actual(mixed, 1);
    await store.claimActualLRP({
      process_guid: mixed,
      index: 1,
      expected: toClaim.modification_tag,
      instance_key: { instance_guid: 'ig-claimed', cell_id: live },
    });
    // One instance on a cell that is not present: listed, so the pass can reap it.
    const stranded = await desire(2);
    await runningOn(stranded, 0, gone);
    await runningOn(stranded, 1, live);
    // An index with no record at all: the LRP is listed whole, so the pass sees the hole.
    const holed = await desire(2);
    await runningOn(holed, 0, live);
    const hole = await actual(holed, 1);
    await store.removeActualLRP({ process_guid: holed, index: 1, expected: hole.modification_tag });
    // Scaled down: the instance past the new count is extra, so listed.
    const shrunk = await desire(2, live);
    await store.updateDesiredLRP({ process_guid: shrunk, update: { instances: 1 } });
    // Nobody desires it any more: every record is extra.
    const undesired = await desire(1, live);
    await store.removeDesiredLRP({ process_guid: undesired });

    const read = await store.readConvergenceSnapshot();
    const of = (processGuid: string) => [
      read.actual_lrps
        .filter((a) => a.process_guid === processGuid && !a.evacuating)
        .map((a) => `${a.index} ${a.state}`),
      read.settled_instances.find((s) => s.process_guid === processGuid)?.count,
    ];
    assert.deepEqual(of(whole), [[], 2]);
    assert.deepEqual(of(mixed), [['2 UNCLAIMED'], 2]);
    assert.deepEqual(of(stranded), [['0 RUNNING'], 1]);
    assert.deepEqual(of(holed), [['0 RUNNING'], undefined]);
    assert.deepEqual(of(shrunk), [['1 RUNNING'], 1]);
    // Its RUNNING instance stays until its cell stops it (a stop request), listed meanwhile.
    assert.deepEqual(of(undesired), [['0 RUNNING'], undefined]);
  });

  it('is, over the whole store, what the definition leaves out and keeps', async () => {
    const store = storeOf();
    const full = await store.readSnapshot();
    const read = await store.readConvergenceSnapshot();
    const expected = splitSettled({
      desired: full.desired_lrps,
      actuals: full.actual_lrps.map(({ crash_reason, placement_error, address, ports, ...rest }) => rest),
      cells: full.cells,
      now: new Date(full.now),
    });
    assert.deepEqual(read.actual_lrps, expected.actuals);
    const byGuid = (a: { process_guid: string }, b: { process_guid: string }) =>
      a.process_guid < b.process_guid ? -1 : a.process_guid > b.process_guid ? 1 : 0;
    assert.deepEqual([...read.settled_instances].sort(byGuid), [...expected.settled].sort(byGuid));
    assert.deepEqual(read.desired_lrps, full.desired_lrps);
    assert.deepEqual(read.domains, full.domains);
    assert.deepEqual(read.cells, full.cells);
    assert.ok(read.settled_instances.length > 0, 'the earlier cases left settled instances to leave out');
  });
}
