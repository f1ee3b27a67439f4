import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import {
  type ActualLRP,
  type BatchedStartRequest,
  type BbsStore,
  CasConflictError,
  openBbsStore,
  type SqlBbsStore,
} from '../bbs/index.js';
import { isSuperseded } from '../core/index.js';
import { desiredDefinition } from '../testing/bbs-fixtures.js';
import { withMethod } from '../testing/rep-fixtures.js';
import { StartWrites } from './start-writes.js';

/** StartWrites over a real SQLite BBS whose single starts the test can hold in flight. */
describe('StartWrites', () => {
  let store: SqlBbsStore;
  /** Each request as the store saw it: `single` or the batch's size. */
  let requests: (number | 'single')[];
  let hold: Promise<void> | undefined;
  let bbs: BbsStore;

  beforeEach(async () => {
    store = await openBbsStore(':memory:');
    requests = [];
    hold = undefined;
    const counting = withMethod(store, 'startActualLRP', async (req: BatchedStartRequest) => {
      requests.push('single');
      await hold;
      return store.startActualLRP(req);
    });
    bbs = withMethod(counting, 'startActualLRPs', async (req: { starts: BatchedStartRequest[] }) => {
      requests.push(req.starts.length);
      await hold;
      return store.startActualLRPs(req);
    });
  });
  afterEach(async () => store.close());

  async function claimed(count: number): Promise<ActualLRP[]> {
    const d = await store.desireLRP(desiredDefinition(`p-${Math.random().toString(36).slice(2, 8)}`, count));
    const { claimed } = await store.claimActualLRPs({
      cell_id: 'cell-1',
      claims: Array.from({ length: count }, (_, index) => ({
        process_guid: d.process_guid,
        index,
        instance_guid: `ig-${index}`,
      })),
    });
    return [...claimed];
  }

  const startOf = (lrp: ActualLRP): BatchedStartRequest => ({
    process_guid: lrp.process_guid,
    index: lrp.index,
    expected: lrp.modification_tag,
    instance_key: { instance_guid: lrp.instance_guid, cell_id: 'cell-1' },
    net_info: { address: '10.0.0.1', ports: [] },
  });

  it('starts made in one turn go together at the next; those made while it is in flight go together after it', async () => {
    const [a, b, c, d, e] = await claimed(5);
    assert.ok(a && b && c && d && e);
    let release = () => {};
    hold = new Promise((resolve) => {
      release = resolve;
    });
    const writes = new StartWrites(bbs);
    const first = [a, b].map((lrp) => writes.start(startOf(lrp)));
    assert.deepEqual(requests, [], 'nothing is sent in the turn the starts are made');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(requests, [2], 'the two made in one turn went in one request');
    const rest = [c, d].map((lrp) => writes.start(startOf(lrp)));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(requests, [2], 'the others wait for the one in flight');
    release();
    const started = await Promise.all([...first, ...rest]);
    assert.deepEqual(requests, [2, 2]);
    // A start alone, on an idle cell, goes at the next turn by itself.
    assert.equal((await writes.start(startOf(e))).state, 'RUNNING');
    assert.deepEqual(requests, [2, 2, 'single']);
    assert.deepEqual(
      started.map((s) => [s.index, s.state]),
      [
        [0, 'RUNNING'],
        [1, 'RUNNING'],
        [2, 'RUNNING'],
        [3, 'RUNNING'],
      ],
    );
  });

  it('a batched start that loses its CAS rejects alone, with the error a single start throws', async () => {
    const [a, b, c] = await claimed(3);
    assert.ok(a && b && c);
    await store.unclaimActualLRP({ process_guid: c.process_guid, index: 2, expected: c.modification_tag });
    const writes = new StartWrites(bbs);
    const first = writes.start(startOf(a));
    const ok = writes.start(startOf(b));
    const lost = writes.start(startOf(c));
    assert.equal((await first).state, 'RUNNING');
    assert.equal((await ok).state, 'RUNNING');
    assert.deepEqual(requests, [3], 'the three went in one request');
    await assert.rejects(lost, (err: unknown) => {
      assert.ok(err instanceof CasConflictError);
      assert.ok(isSuperseded(err));
      assert.equal((err.current as ActualLRP).state, 'UNCLAIMED');
      return true;
    });
  });

  it('a batch request that fails rejects each of its starts with that failure', async () => {
    const [a, b] = await claimed(2);
    assert.ok(a && b);
    const down = new Error('the BBS is away');
    const writes = new StartWrites(withMethod(bbs, 'startActualLRPs', () => Promise.reject(down)));
    const batched = [a, b].map((lrp) => writes.start(startOf(lrp)));
    await Promise.all(batched.map((start) => assert.rejects(start, (err) => err === down)));
    // And the next start goes on its own again.
    const [e] = await claimed(1);
    assert.ok(e);
    assert.equal((await writes.start(startOf(e))).state, 'RUNNING');
  });
});
