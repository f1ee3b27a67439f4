import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TaskAuctionWork } from './auction.js';
import { AuctionPool, type Delivery } from './auction-pool.js';
import { taskKey } from './auction-work-keys.js';

function task(task_guid: string): TaskAuctionWork {
  return { kind: 'task', task_guid, domain: 'd', memory_mb: 64, disk_mb: 64, placement_tags: [] };
}

function delivery(id: number, key: string): Delivery {
  return { kind: 'task', ids: [id], pending: new Set([key]) };
}

describe('AuctionPool', () => {
  it('gives work up after retryBatches failed batches', () => {
    const pool = new AuctionPool(3);
    pool.add(task('t'), delivery(1, taskKey('t')));
    const entry = pool.entries()[0];
    assert.ok(entry);
    assert.deepEqual(
      [pool.retryOrDrop(entry), pool.retryOrDrop(entry), pool.retryOrDrop(entry)],
      [false, false, true],
    );
    assert.equal(pool.size, 0);
  });

  it('keeps work waiting for room whatever the number of batches, until it has waited maxWaitMs', () => {
    const pool = new AuctionPool(3);
    pool.add(task('t'), delivery(1, taskKey('t')));
    const entry = pool.entries()[0];
    assert.ok(entry);
    for (let batch = 0; batch < 50; batch++)
      assert.equal(pool.waitForRoom(entry, 1_000 + batch * 100, 30_000), false);
    assert.equal(pool.size, 1, 'fifty batches later it is still there');
    // Counted from its first wait (t = 1,000), not from the last.
    assert.equal(pool.waitForRoom(entry, 30_999, 30_000), false);
    assert.equal(pool.waitForRoom(entry, 31_000, 30_000), true);
    assert.equal(pool.size, 0);
    // A task's outbox row is left to come back after its visibility timeout: nothing to ack.
    assert.deepEqual(pool.takeAckable(), { lrpIds: [], taskIds: [] });
  });

  it('starts the wait for room over when the outbox delivers the work again', () => {
    const pool = new AuctionPool(3);
    pool.add(task('t'), delivery(1, taskKey('t')));
    const entry = pool.entries()[0];
    assert.ok(entry);
    assert.equal(pool.waitForRoom(entry, 0, 30_000), false);
    // Its row's visibility timeout ran out and the next batch took it again: still wanted, and
    // hidden in the outbox until 60,000, so it must stay in the pool past its first deadline.
    pool.add(task('t'), delivery(2, taskKey('t')));
    assert.equal(pool.size, 1, 'one entry per task, whatever the deliveries');
    assert.equal(pool.waitForRoom(entry, 30_100, 30_000), false);
    assert.equal(pool.waitForRoom(entry, 60_099, 30_000), false);
    assert.equal(pool.waitForRoom(entry, 60_100, 30_000), true);
    // Placed instead, both deliveries' rows would be acked.
    const again = new AuctionPool(3);
    again.add(task('t'), delivery(1, taskKey('t')));
    again.add(task('t'), delivery(2, taskKey('t')));
    const placed = again.entries()[0];
    assert.ok(placed);
    again.settle(placed);
    assert.deepEqual(again.takeAckable(), { lrpIds: [], taskIds: [1, 2] });
  });

  it('settles waiting work like any other once placed', () => {
    const pool = new AuctionPool(3);
    pool.add(task('t'), delivery(7, taskKey('t')));
    const entry = pool.entries()[0];
    assert.ok(entry);
    pool.waitForRoom(entry, 0, 30_000);
    pool.settle(entry);
    assert.equal(pool.size, 0);
    assert.deepEqual(pool.takeAckable(), { lrpIds: [], taskIds: [7] });
  });
});
