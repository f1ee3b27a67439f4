import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import type { BbsEvent, BbsStore } from '../bbs/index.js';

/** The clock the contract's store runs on (`FakeClock` of bbs-store-contract.ts). */
interface Clock {
  advance(ms: number): void;
}

/**
 * Cell presences on the event log, part of the BBS contract: a presence that begins, changes what
 * it offers or ends is an event, a heartbeat that only extends it is not, and no event shows a
 * rep's token. Each case works on its own cell ids of the shared store (whose other cases leave
 * expired cells behind: `expireCells` reaps those too, so only these ids are looked at).
 */
export function describeCellEventsContract(storeOf: () => BbsStore, clock: Clock): void {
  const presence = (cellId: string) => ({
    cell_id: cellId,
    zone: 'z1',
    capacity: { memory_mb: 1024, disk_mb: 2048, containers: 10 },
    rep_url: 'http://127.0.0.1:1800',
    placement_tags: ['ssd'],
    rep_token: 't'.repeat(43),
  });

  /** The cell events about `cellId` written after `head`, as `type[:reason]`. */
  async function cellEvents(head: string, cellId: string): Promise<string[]> {
    const events = await storeOf().readEvents({ after: head, limit: 10_000 });
    return events.filter((e) => aboutCell(e, cellId)).map(describe);
  }

  it('a presence that begins, changes or ends is an event; a renewal is not; no token is shown', async () => {
    const store = storeOf();
    const id = `cell-${randomUUID().slice(0, 8)}`;
    const head = await store.headEventId();
    await store.heartbeatCell({ presence: presence(id), ttl_ms: 1000 });
    await store.heartbeatCell({ presence: presence(id), ttl_ms: 1000 });
    await store.heartbeatCell({
      presence: { ...presence(id), capacity: { memory_mb: 512, disk_mb: 2048, containers: 10 } },
      ttl_ms: 1000,
    });
    await store.removeCell({ cell_id: id });
    await store.removeCell({ cell_id: id });
    assert.deepEqual(await cellEvents(head, id), [
      'cell_appeared',
      'cell_changed',
      'cell_disappeared:removed',
    ]);
    const all = await store.readEvents({ after: head, limit: 10_000 });
    assert.ok(!JSON.stringify(all).includes('t'.repeat(43)), "no event carries a rep's token");
    const changed = all.find((e) => e.type === 'cell_changed' && e.after.cell_id === id);
    assert.equal(changed?.type === 'cell_changed' ? changed.after.capacity.memory_mb : 0, 512);
  });

  it('an expired presence is reaped once, with its event; a cell back after it appears again', async () => {
    const store = storeOf();
    const [gone, kept] = [`cell-${randomUUID().slice(0, 8)}`, `cell-${randomUUID().slice(0, 8)}`];
    const head = await store.headEventId();
    await store.heartbeatCell({ presence: presence(gone), ttl_ms: 1000 });
    await store.heartbeatCell({ presence: presence(kept), ttl_ms: 5000 });
    clock.advance(1001);
    assert.deepEqual(
      (await store.expireCells()).filter((c) => c === gone || c === kept),
      [gone],
    );
    assert.deepEqual(
      (await store.expireCells()).filter((c) => c === gone || c === kept),
      [],
    );
    assert.ok((await store.listCells()).some((c) => c.cell_id === kept));
    await store.heartbeatCell({ presence: presence(gone), ttl_ms: 1000 });
    assert.deepEqual(await cellEvents(head, gone), [
      'cell_appeared',
      'cell_disappeared:expired',
      'cell_appeared',
    ]);
    assert.deepEqual(await cellEvents(head, kept), ['cell_appeared']);
    await store.removeCell({ cell_id: gone });
    await store.removeCell({ cell_id: kept });
  });

  it('a presence that expired but was not reaped yet appears again on its next heartbeat', async () => {
    const store = storeOf();
    const id = `cell-${randomUUID().slice(0, 8)}`;
    const head = await store.headEventId();
    await store.heartbeatCell({ presence: presence(id), ttl_ms: 1000 });
    clock.advance(1001);
    await store.heartbeatCell({ presence: presence(id), ttl_ms: 1000 });
    assert.deepEqual(await cellEvents(head, id), ['cell_appeared', 'cell_appeared']);
    await store.removeCell({ cell_id: id });
  });
}

function aboutCell(event: BbsEvent, cellId: string): boolean {
  switch (event.type) {
    case 'cell_appeared':
      return event.cell.cell_id === cellId;
    case 'cell_changed':
      return event.after.cell_id === cellId;
    case 'cell_disappeared':
      return event.cell_id === cellId;
    default:
      return false;
  }
}

function describe(event: BbsEvent): string {
  return event.type === 'cell_disappeared' ? `${event.type}:${event.reason}` : event.type;
}
