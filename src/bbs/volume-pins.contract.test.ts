import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { desiredDefinition } from '../testing/bbs-fixtures.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import type { BbsStore } from './bbs-store.js';
import { openBbsStore } from './index.js';
import { cellPlacementTag } from './placement-tags.js';

/**
 * Issue 23 in the store, on SQLite and PostgreSQL: an instance with named volumes that ran on a
 * cell is pinned there (its start requests carry the cell's tag), across crashes and across
 * versions of its DesiredLRP in the domain; an operator's release unpins it.
 */
function describeVolumePins(
  name: string,
  open: () => Promise<{ store: BbsStore; close(): Promise<void> }>,
  skip?: string,
) {
  describe(`volume pins: ${name}`, { skip: skip ?? false }, () => {
    let store: BbsStore;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, close } = await open());
    });
    after(() => close?.());

    const volumes = [
      { name: 'data', kind: 'named', target: '/data' },
      { name: 'tmp', kind: 'empty', target: '/tmp' },
    ] as const;
    const key = (cell_id: string) => ({ instance_guid: `ig-${randomUUID()}`, cell_id });
    const net = { address: '10.0.0.5', ports: [] };

    /** The pending start requests of one LRP, taken and acknowledged: index → tags and pin. */
    async function starts(guid: string) {
      const taken = await store.takeStartRequests({ limit: 10_000, visibility_ms: 0 });
      const mine = taken.filter((d) => d.request.process_guid === guid);
      await store.ackStartRequests({ ids: mine.flatMap((d) => d.ids) });
      return mine
        .flatMap((d) =>
          d.request.indices.map((i) => [i, d.request.placement_tags, d.request.pinned_cell ?? '']),
        )
        .sort((a, b) => Number(a[0]) - Number(b[0]));
    }

    /** Claims and starts index `index` of `guid` on `cell`. */
    async function runOn(guid: string, index: number, cell: string) {
      const ref = { process_guid: guid, index };
      const group = await store.getActualLRP(ref);
      const instance_key = key(cell);
      const claimed = await store.claimActualLRP({
        ...ref,
        expected: group.instance?.modification_tag ?? { epoch: '', index: 0 },
        instance_key,
      });
      return store.startActualLRP({
        ...ref,
        expected: claimed.modification_tag,
        instance_key,
        net_info: net,
      });
    }

    it('a crash of an instance that ran on c1 asks for a start on c1 only; unpinned indices stay free', async () => {
      const domain = `d-${randomUUID().slice(0, 8)}`;
      const guid = `db-${randomUUID().slice(0, 8)}`;
      await store.desireLRP(desiredDefinition(guid, 2, { domain, volumes, placement_tags: ['ssd'] }));
      assert.deepEqual(await starts(guid), [
        [0, ['ssd'], ''],
        [1, ['ssd'], ''],
      ]);
      const running = await runOn(guid, 0, 'c1');
      assert.deepEqual(await store.listVolumePins({ domain }), [
        { domain, volume: 'data', index: 0, cell_id: 'c1', created_at: running.since },
      ]);
      await store.crashActualLRP({
        process_guid: guid,
        index: 0,
        expected: running.modification_tag,
        instance_key: { instance_guid: running.instance_guid, cell_id: 'c1' },
        state: 'UNCLAIMED',
        crash_count: 1,
        last_crashed_at: new Date().toISOString(),
        crash_reason: 'exit status 3',
      });
      assert.deepEqual(await starts(guid), [[0, ['ssd', cellPlacementTag('c1')], 'c1']]);
    });

    it('batched claims and starts pin as single ones do; a batched unclaim asks for a start on the pinned cell', async () => {
      const domain = `d-${randomUUID().slice(0, 8)}`;
      const guid = `db-${randomUUID().slice(0, 8)}`;
      await store.desireLRP(desiredDefinition(guid, 2, { domain, volumes }));
      await starts(guid);
      const claims = [0, 1].map((index) => ({ process_guid: guid, index, instance_guid: `ig-${index}` }));
      const { claimed } = await store.claimActualLRPs({ cell_id: 'c2', claims });
      const { results } = await store.startActualLRPs({
        starts: claimed.map((a) => ({
          process_guid: guid,
          index: a.index,
          expected: a.modification_tag,
          instance_key: { instance_guid: a.instance_guid, cell_id: 'c2' },
          net_info: net,
        })),
      });
      const running = results.flatMap((r) => ('actual_lrp' in r ? [r.actual_lrp] : []));
      assert.equal(running.length, 2);
      assert.deepEqual(
        (await store.listVolumePins({ domain })).map((p) => [p.volume, p.index, p.cell_id]),
        [
          ['data', 0, 'c2'],
          ['data', 1, 'c2'],
        ],
      );
      await store.unclaimActualLRPs({
        unclaims: running.map((a) => ({ process_guid: guid, index: a.index, expected: a.modification_tag })),
      });
      assert.deepEqual(await starts(guid), [
        [0, [cellPlacementTag('c2')], 'c2'],
        [1, [cellPlacementTag('c2')], 'c2'],
      ]);
    });

    it('the pin holds for the next version of the DesiredLRP (same domain and volume), until released', async () => {
      const domain = `d-${randomUUID().slice(0, 8)}`;
      const v1 = `db-v1-${randomUUID().slice(0, 8)}`;
      await store.desireLRP(desiredDefinition(v1, 1, { domain, volumes }));
      await starts(v1);
      await runOn(v1, 0, 'c2');
      await store.removeDesiredLRP({ process_guid: v1 });
      const v2 = `db-v2-${randomUUID().slice(0, 8)}`;
      await store.desireLRP(desiredDefinition(v2, 2, { domain, volumes }));
      assert.deepEqual(await starts(v2), [
        [0, [cellPlacementTag('c2')], 'c2'],
        [1, [], ''],
      ]);
      // Without named volumes, nothing pins (the same domain, another LRP).
      const plain = `web-${randomUUID().slice(0, 8)}`;
      await store.desireLRP(desiredDefinition(plain, 1, { domain, volumes: [volumes[1]] }));
      await starts(plain);
      await runOn(plain, 0, 'c3');
      assert.deepEqual(
        (await store.listVolumePins({ domain })).map((p) => [p.volume, p.index, p.cell_id]),
        [['data', 0, 'c2']],
      );

      assert.deepEqual(await store.releaseVolumePins({ domain, volume: 'other' }), { released: 0 });
      assert.deepEqual(await store.releaseVolumePins({ domain, volume: 'data', index: 0 }), { released: 1 });
      assert.deepEqual(await store.listVolumePins({ domain }), []);
      const group = await store.getActualLRP({ process_guid: v2, index: 0 });
      await store.unclaimActualLRP({
        process_guid: v2,
        index: 0,
        expected: group.instance?.modification_tag ?? { epoch: '', index: 0 },
      });
      assert.deepEqual(await starts(v2), [[0, [], '']]);
    });
  });
}

describeVolumePins('SQLite', async () => {
  const store = await openBbsStore(':memory:');
  return { store, close: () => store.close() };
});

describeVolumePins(
  'PostgreSQL',
  async () => {
    const server: PostgresServer = await startPostgres();
    const store = await openBbsStore(server.url);
    return {
      store,
      close: async () => {
        await store.close();
        await server.stop();
      },
    };
  },
  postgresSkipReason(),
);
