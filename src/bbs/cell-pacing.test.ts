import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cellPacing, defaultCellPacing } from './cell-pacing.js';
import { openBbsStore } from './open-bbs-store.js';

const presence = (cell_id: string) => ({
  cell_id,
  zone: 'z1',
  capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
  rep_url: 'http://127.0.0.1:1',
  placement_tags: [],
});

describe('cellPacing', () => {
  const limits = { maxHeartbeatsPerSecond: 50, maxCellPassesPerSecond: 20 };
  const rows: [cells: number, requestedTtlMs: number, ttlMs: number, minPollMs: number][] = [
    // A small cluster gets what it asks: 100 cells at a 10 s TTL are 30 heartbeats/s.
    [1, 10_000, 10_000, 50],
    [100, 10_000, 10_000, 5_000],
    // 1,000 cells at a 10 s TTL would be 300/s: the TTL grows to 60 s (50/s), passes every 50 s.
    [1_000, 10_000, 60_000, 50_000],
    // A TTL asked longer than the floor is kept.
    [1_000, 90_000, 90_000, 50_000],
    // No count yet is one cell.
    [0, 30_000, 30_000, 50],
  ];
  for (const [cells, requested, ttl, poll] of rows) {
    it(`${cells} cells asking ${requested} ms: TTL ${ttl} ms, passes at least ${poll} ms apart`, () => {
      assert.deepEqual(cellPacing(cells, requested, limits), { ttl_ms: ttl, min_poll_interval_ms: poll });
    });
  }
  it('keeps every cell within the limits, whatever the count', () => {
    for (const cells of [1, 7, 49, 50, 51, 333, 1_000, 12_345]) {
      const p = cellPacing(cells, 1_000, defaultCellPacing);
      assert.ok((cells * 3 * 1000) / p.ttl_ms <= defaultCellPacing.maxHeartbeatsPerSecond, `${cells} beats`);
      assert.ok((cells * 1000) / p.min_poll_interval_ms <= defaultCellPacing.maxCellPassesPerSecond);
    }
  });
});

describe('heartbeats the server paces', () => {
  it('grant a longer TTL once the cells would beat faster than the limit, and write that expiry', async () => {
    let nowMs = Date.parse('2026-11-28T00:00:00Z');
    const store = await openBbsStore(':memory:', {
      now: () => new Date(nowMs),
      cellPacing: { maxHeartbeatsPerSecond: 3, maxCellPassesPerSecond: 2 },
    });
    try {
      // Alone, 3 heartbeats per 1 s TTL are 3/s: within the limit.
      const first = await store.heartbeatCell({ presence: presence('c1'), ttl_ms: 1_000 });
      assert.equal(first.ttl_ms, 1_000);
      assert.equal(first.expires_at, new Date(nowMs + 1_000).toISOString());
      assert.equal(first.min_poll_interval_ms, 500);
      // Four cells: 12/s asked, so each gets a 4 s TTL (3/s together) and passes 2 s apart.
      for (const id of ['c2', 'c3', 'c4'])
        await store.heartbeatCell({ presence: presence(id), ttl_ms: 1_000 });
      nowMs += 100;
      const fourth = await store.heartbeatCell({ presence: presence('c4'), ttl_ms: 1_000 });
      assert.deepEqual([fourth.ttl_ms, fourth.min_poll_interval_ms], [4_000, 2_000]);
      assert.equal(fourth.expires_at, new Date(nowMs + 4_000).toISOString());
      // The presence lives by the granted TTL: still listed after the 1 s it asked for.
      nowMs += 2_000;
      assert.ok((await store.listCells()).some((c) => c.cell_id === 'c4'));
      // Once the others have lapsed and the count is taken again (every 5 s), one cell asks alone.
      nowMs += 6_000;
      const alone = await store.heartbeatCell({ presence: presence('c1'), ttl_ms: 1_000 });
      assert.equal(alone.ttl_ms, 1_000);
    } finally {
      await store.close();
    }
  });
});
