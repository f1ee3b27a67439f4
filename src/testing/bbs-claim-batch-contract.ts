import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import type { ActualLRP, BbsStore } from '../bbs/index.js';
import { desiredDefinition } from './bbs-fixtures.js';

/**
 * Batch claims, starts and unclaims (`claimActualLRPs`, `startActualLRPs`, `unclaimActualLRPs`),
 * part of the BBS contract: what a cell handed many instances by one auction claims in one request,
 * the starts that piled up while its last request was in flight go in one, and the converger gives
 * a lost cell's instances back in one. Each case desires its own LRP on the shared store.
 */
export function describeClaimBatchContract(storeOf: () => BbsStore): void {
  const guid = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

  async function instances(processGuid: string): Promise<ActualLRP[]> {
    return storeOf().listActualLRPs({ process_guid: processGuid });
  }

  it('claims every UNCLAIMED instance named, for the cell, in one call', async () => {
    const store = storeOf();
    const d = await store.desireLRP(desiredDefinition(guid('batch'), 3));
    const result = await store.claimActualLRPs({
      cell_id: 'cell-a',
      claims: [2, 0, 1].map((index) => ({
        process_guid: d.process_guid,
        index,
        instance_guid: `ig-${index}`,
      })),
    });
    assert.deepEqual(result.refused, []);
    assert.deepEqual(
      result.claimed.map((a) => [a.index, a.state, a.cell_id, a.instance_guid]),
      [
        [0, 'CLAIMED', 'cell-a', 'ig-0'],
        [1, 'CLAIMED', 'cell-a', 'ig-1'],
        [2, 'CLAIMED', 'cell-a', 'ig-2'],
      ],
    );
    // What came back is what is stored, tag included: the claimant's next CAS uses it.
    assert.deepEqual(
      (await instances(d.process_guid)).map((a) => [a.index, a.state, a.modification_tag]),
      result.claimed.map((a) => [a.index, a.state, a.modification_tag]),
    );
  });

  it('refuses what is not UNCLAIMED or does not exist, and still claims the rest', async () => {
    const store = storeOf();
    const d = await store.desireLRP(desiredDefinition(guid('batch'), 2));
    const ref0 = { process_guid: d.process_guid, index: 0 };
    const [zero] = await instances(d.process_guid);
    assert.ok(zero);
    await store.claimActualLRP({
      ...ref0,
      expected: zero.modification_tag,
      instance_key: { instance_guid: 'ig-other', cell_id: 'cell-b' },
    });
    const result = await store.claimActualLRPs({
      cell_id: 'cell-a',
      claims: [
        { ...ref0, instance_guid: 'ig-0' },
        { process_guid: d.process_guid, index: 1, instance_guid: 'ig-1' },
        { process_guid: guid('missing'), index: 0, instance_guid: 'ig-x' },
      ],
    });
    assert.deepEqual(
      result.claimed.map((a) => [a.index, a.cell_id]),
      [[1, 'cell-a']],
    );
    assert.equal(result.refused.length, 2);
    const taken = result.refused.find((r) => r.process_guid === d.process_guid);
    assert.equal(taken?.current?.cell_id, 'cell-b');
    assert.match(taken?.reason ?? '', /CLAIMED on cell cell-b, not UNCLAIMED/);
    const missing = result.refused.find((r) => r.process_guid !== d.process_guid);
    assert.equal(missing?.current, null);
    assert.match(missing?.reason ?? '', /does not exist/);
    // The refused one is untouched.
    const after0 = (await store.getActualLRP(ref0)).instance;
    assert.equal(after0?.instance_guid, 'ig-other');
  });

  it('a repeated claim by its claimant is claimed again, unchanged; by another cell refused', async () => {
    const store = storeOf();
    const d = await store.desireLRP(desiredDefinition(guid('batch'), 1));
    const claim = { process_guid: d.process_guid, index: 0, instance_guid: 'ig-0' };
    const first = await store.claimActualLRPs({ cell_id: 'cell-a', claims: [claim] });
    const again = await store.claimActualLRPs({ cell_id: 'cell-a', claims: [claim] });
    assert.deepEqual(again.claimed, first.claimed);
    const other = await store.claimActualLRPs({ cell_id: 'cell-b', claims: [claim] });
    assert.deepEqual(other.claimed, []);
    assert.equal(other.refused[0]?.current?.cell_id, 'cell-a');
  });

  it('each claim is an event, as a single claim is', async () => {
    const store = storeOf();
    const d = await store.desireLRP(desiredDefinition(guid('batch'), 2));
    const head = await store.headEventId();
    await store.claimActualLRPs({
      cell_id: 'cell-a',
      claims: [0, 1].map((index) => ({ process_guid: d.process_guid, index, instance_guid: `ig-${index}` })),
    });
    const events = (await store.readEvents({ after: head, limit: 1000 })).flatMap((e) =>
      e.type === 'actual_lrp_changed' && e.after.process_guid === d.process_guid
        ? [[e.type, e.after.index, e.after.state]]
        : [],
    );
    assert.deepEqual(events, [
      ['actual_lrp_changed', 0, 'CLAIMED'],
      ['actual_lrp_changed', 1, 'CLAIMED'],
    ]);
  });

  it('an empty batch claims nothing', async () => {
    assert.deepEqual(await storeOf().claimActualLRPs({ cell_id: 'cell-a', claims: [] }), {
      claimed: [],
      refused: [],
      desired_lrps: [],
    });
  });

  it('answers with the DesiredLRP of each process guid claimed, once, and none for what was refused', async () => {
    const store = storeOf();
    const a = await store.desireLRP(desiredDefinition(guid('batch'), 2, { env: { MODE: 'a' } }));
    const b = await store.desireLRP(desiredDefinition(guid('batch'), 1));
    const [bZero] = await instances(b.process_guid);
    assert.ok(bZero);
    await store.claimActualLRP({
      process_guid: b.process_guid,
      index: 0,
      expected: bZero.modification_tag,
      instance_key: { instance_guid: 'ig-other', cell_id: 'cell-b' },
    });
    const result = await store.claimActualLRPs({
      cell_id: 'cell-a',
      claims: [
        { process_guid: a.process_guid, index: 0, instance_guid: 'ig-0' },
        { process_guid: a.process_guid, index: 1, instance_guid: 'ig-1' },
        { process_guid: b.process_guid, index: 0, instance_guid: 'ig-b' },
      ],
    });
    assert.deepEqual(
      result.desired_lrps.map((d) => [d.process_guid, d.env]),
      [[a.process_guid, { MODE: 'a' }]],
    );
    assert.deepEqual(result.desired_lrps[0], await store.getDesiredLRP({ process_guid: a.process_guid }));
  });

  const net = (port: number) => ({ address: '10.0.0.9', ports: [{ container_port: 8080, host_port: port }] });

  /** An LRP of `count` instances, all claimed by cell-a (instance guid `ig-INDEX`). */
  async function claimedLRP(count: number): Promise<ActualLRP[]> {
    const store = storeOf();
    const d = await store.desireLRP(desiredDefinition(guid('batch'), count));
    const indices = Array.from({ length: count }, (_, i) => i);
    const result = await store.claimActualLRPs({
      cell_id: 'cell-a',
      claims: indices.map((index) => ({ process_guid: d.process_guid, index, instance_guid: `ig-${index}` })),
    });
    return [...result.claimed];
  }

  function startOf(lrp: ActualLRP, port: number) {
    return {
      process_guid: lrp.process_guid,
      index: lrp.index,
      expected: lrp.modification_tag,
      instance_key: { instance_guid: lrp.instance_guid, cell_id: lrp.cell_id },
      net_info: net(port),
    };
  }

  it('starts many claimed instances in one call, each with its own net info', async () => {
    const claimed = await claimedLRP(3);
    const { results } = await storeOf().startActualLRPs({
      starts: claimed.map((lrp, i) => startOf(lrp, 61000 + i)),
    });
    const started = results.map((r) => ('actual_lrp' in r ? r.actual_lrp : undefined));
    assert.deepEqual(
      started.map((a) => [a?.index, a?.state, a?.ports[0]?.host_port]),
      [
        [0, 'RUNNING', 61000],
        [1, 'RUNNING', 61001],
        [2, 'RUNNING', 61002],
      ],
    );
    const processGuid = claimed[0]?.process_guid ?? '';
    assert.deepEqual(
      (await instances(processGuid)).map((a) => [a.index, a.state, a.modification_tag]),
      started.map((a) => [a?.index, a?.state, a?.modification_tag]),
    );
  });

  it("a start that loses its CAS or its record is that item's error; the others land", async () => {
    const store = storeOf();
    const [zero, one, two] = await claimedLRP(3);
    assert.ok(zero && one && two);
    // Index 1 moves on behind the caller's back; index 2's LRP index does not exist.
    await store.unclaimActualLRP({
      process_guid: one.process_guid,
      index: 1,
      expected: one.modification_tag,
    });
    const { results } = await store.startActualLRPs({
      starts: [startOf(zero, 61000), startOf(one, 61001), { ...startOf(two, 61002), index: 7 }],
    });
    assert.equal(results.length, 3);
    assert.ok('actual_lrp' in (results[0] ?? {}), 'index 0 started');
    const lost = results[1];
    assert.ok(lost && 'error' in lost);
    assert.equal(lost.error.code, 'cas_conflict');
    assert.equal((lost.error.current as ActualLRP | undefined)?.state, 'UNCLAIMED');
    const missing = results[2];
    assert.ok(missing && 'error' in missing);
    assert.equal(missing.error.code, 'not_found');
    assert.deepEqual(
      (await instances(zero.process_guid)).map((a) => `${a.index}:${a.state}`),
      ['0:RUNNING', '1:UNCLAIMED', '2:CLAIMED'],
    );
  });

  it('a start of an instance RUNNING on another cell is refused, as a single start is', async () => {
    const store = storeOf();
    const [zero] = await claimedLRP(1);
    assert.ok(zero);
    const running = await store.startActualLRP(startOf(zero, 61000));
    const { results } = await store.startActualLRPs({
      starts: [{ ...startOf(running, 61001), instance_key: { instance_guid: 'ig-b', cell_id: 'cell-b' } }],
    });
    const refused = results[0];
    assert.ok(refused && 'error' in refused);
    assert.equal(
      (await store.getActualLRP({ process_guid: zero.process_guid, index: 0 })).instance?.cell_id,
      'cell-a',
    );
  });

  /** Takes and acknowledges the pending start requests of one LRP: the indices asked for. */
  async function startRequestsFor(processGuid: string): Promise<number[]> {
    const store = storeOf();
    const taken = await store.takeStartRequests({ limit: 10_000, visibility_ms: 0 });
    const mine = taken.filter((d) => d.request.process_guid === processGuid);
    await store.ackStartRequests({ ids: mine.flatMap((d) => d.ids) });
    return mine.flatMap((d) => d.request.indices).sort((a, b) => a - b);
  }

  const casOf = (lrp: ActualLRP) => ({
    process_guid: lrp.process_guid,
    index: lrp.index,
    expected: lrp.modification_tag,
  });

  it('unclaims many instances in one call, each UNCLAIMED with a start request', async () => {
    const store = storeOf();
    const claimed = await claimedLRP(3);
    const [zero] = claimed;
    assert.ok(zero);
    const running = await store.startActualLRP(startOf(zero, 61000));
    const processGuid = zero.process_guid;
    await startRequestsFor(processGuid);
    const { results } = await store.unclaimActualLRPs({
      unclaims: [running, ...claimed.slice(1)].map(casOf),
    });
    const unclaimed = results.map((r) => ('actual_lrp' in r ? r.actual_lrp : undefined));
    assert.deepEqual(
      unclaimed.map((a) => [a?.index, a?.state, a?.cell_id, a?.instance_guid]),
      [
        [0, 'UNCLAIMED', '', ''],
        [1, 'UNCLAIMED', '', ''],
        [2, 'UNCLAIMED', '', ''],
      ],
    );
    assert.deepEqual(
      (await instances(processGuid)).map((a) => [a.index, a.state, a.modification_tag]),
      unclaimed.map((a) => [a?.index, a?.state, a?.modification_tag]),
    );
    assert.deepEqual(await startRequestsFor(processGuid), [0, 1, 2]);
  });

  it('unclaims instances of several LRPs in one call, a start request for each', async () => {
    const store = storeOf();
    // A lost cell's instances, as the converger sends them: LRPs mixed in one batch.
    const lrps = [await claimedLRP(1), await claimedLRP(2), await claimedLRP(3)];
    for (const lrp of lrps) await startRequestsFor(lrp[0]?.process_guid ?? '');
    const mixed = [2, 1, 0].flatMap((at) => lrps.map((lrp) => lrp[at])).filter((a) => a !== undefined);
    const { results } = await store.unclaimActualLRPs({ unclaims: mixed.map(casOf) });
    assert.equal(results.filter((r) => 'actual_lrp' in r).length, 6);
    for (const lrp of lrps) {
      const processGuid = lrp[0]?.process_guid ?? '';
      assert.deepEqual(
        (await instances(processGuid)).map((a) => a.state),
        lrp.map(() => 'UNCLAIMED'),
      );
      assert.deepEqual(
        await startRequestsFor(processGuid),
        lrp.map((a) => a.index),
      );
    }
  });

  it("an unclaim that loses its CAS or its record is that item's error; the others land", async () => {
    const store = storeOf();
    const [zero, one] = await claimedLRP(2);
    assert.ok(zero && one);
    await startRequestsFor(zero.process_guid);
    const { results } = await store.unclaimActualLRPs({
      unclaims: [
        casOf(zero),
        { ...casOf(one), expected: zero.modification_tag },
        { ...casOf(one), index: 9 },
      ],
    });
    assert.ok('actual_lrp' in (results[0] ?? {}), 'index 0 unclaimed');
    const lost = results[1];
    assert.ok(lost && 'error' in lost);
    assert.equal(lost.error.code, 'cas_conflict');
    assert.equal((lost.error.current as ActualLRP | undefined)?.state, 'CLAIMED');
    const missing = results[2];
    assert.ok(missing && 'error' in missing);
    assert.equal(missing.error.code, 'not_found');
    assert.deepEqual(
      (await instances(zero.process_guid)).map((a) => `${a.index}:${a.state}`),
      ['0:UNCLAIMED', '1:CLAIMED'],
    );
    assert.deepEqual(await startRequestsFor(zero.process_guid), [0]);
  });

  it('an instance named twice in one batch: the second sees the first, and both are events', async () => {
    const store = storeOf();
    const [zero] = await claimedLRP(1);
    assert.ok(zero);
    const head = await store.headEventId();
    const first = startOf(zero, 61000);
    const second = {
      ...startOf(zero, 61001),
      expected: { ...zero.modification_tag, index: zero.modification_tag.index + 1 },
    };
    const stale = startOf(zero, 61002);
    const { results } = await store.startActualLRPs({ starts: [first, second, stale] });
    assert.deepEqual(
      results.map((r) => ('actual_lrp' in r ? r.actual_lrp.ports[0]?.host_port : r.error.code)),
      [61000, 61001, 'cas_conflict'],
    );
    const stored = (await instances(zero.process_guid))[0];
    assert.equal(stored?.ports[0]?.host_port, 61001);
    assert.equal(stored?.modification_tag.index, zero.modification_tag.index + 2);
    const events = (await store.readEvents({ after: head, limit: 1000 })).flatMap((e) =>
      e.type === 'actual_lrp_changed' && e.after.process_guid === zero.process_guid
        ? [[e.before.ports[0]?.host_port ?? null, e.after.ports[0]?.host_port]]
        : [],
    );
    assert.deepEqual(events, [
      [null, 61000],
      [61000, 61001],
    ]);
  });

  it('an empty batch of unclaims changes nothing', async () => {
    assert.deepEqual(await storeOf().unclaimActualLRPs({ unclaims: [] }), { results: [] });
  });
}
