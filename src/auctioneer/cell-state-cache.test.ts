import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CellPresence } from '../bbs/index.js';
import type { CellState } from './auction.js';
import { CellStateCache } from './cell-state-cache.js';

const presence = (cell_id: string, rep_url = 'http://rep-1'): CellPresence => ({
  cell_id,
  zone: 'z1',
  capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
  rep_url,
  placement_tags: [],
  expires_at: '2030-01-01T00:00:00Z',
});

const state = (cell_id: string): CellState => ({
  cell_id,
  zone: 'z1',
  capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
  used: { memory_mb: 100, disk_mb: 10, containers: 1 },
  lrps: { web: 1 },
  evacuating: false,
  placement_tags: [],
  optional_placement_tags: [],
});

/** The kept state of a live cell if it is not stale. */
function fresh(cache: CellStateCache, cell: CellPresence): CellState | undefined {
  const kept = cache.kept(cell);
  return kept && !kept.stale ? kept.state : undefined;
}

describe('CellStateCache', () => {
  it('serves a state until it is maxAgeMs old, never from another rep of the same cell', () => {
    let now = 1_000;
    const cache = new CellStateCache(500, () => now);
    const c1 = presence('c1');
    assert.equal(fresh(cache, c1), undefined, 'nothing read yet');
    cache.remember(c1, state('c1'));
    now += 499;
    assert.deepEqual(fresh(cache, c1), state('c1'));
    assert.equal(fresh(cache, presence('c1', 'http://rep-2')), undefined, 'the cell restarted');
    now += 1;
    assert.equal(fresh(cache, c1), undefined, 'old');
    cache.remember(c1, state('c1'));
    now -= 10;
    assert.equal(fresh(cache, c1), undefined, 'a clock that went back trusts nothing');
  });

  it('keeps a stale state usable, and keeps a re-read only if nothing wrote the entry meanwhile', () => {
    let now = 0;
    const cache = new CellStateCache(500, () => now);
    const c1 = presence('c1');
    cache.remember(c1, state('c1'));
    now = 600;
    const kept = cache.kept(c1);
    assert.ok(kept?.stale);
    assert.deepEqual(kept.state, state('c1'));
    // A re-read begun now, while the cell accepts work: the answer may lack that work.
    cache.accepted('c1', {
      lrps: [],
      tasks: [{ task_guid: 't', domain: 'd', memory_mb: 1, disk_mb: 0, placement_tags: [] }],
    });
    assert.equal(cache.remember(c1, state('c1'), kept.version), false);
    assert.equal(cache.kept(c1)?.state.used.containers, 2, 'the accepted work is still counted');
    // A re-read with nothing written meanwhile replaces the entry and is fresh again.
    const before = cache.kept(c1);
    assert.ok(before);
    assert.equal(cache.remember(c1, state('c1'), before.version), true);
    assert.equal(cache.kept(c1)?.stale, false);
    // Nor is a dropped entry brought back by a read begun before the drop.
    const basis = cache.kept(c1)?.version;
    cache.forget('c1');
    assert.equal(cache.remember(c1, state('c1'), basis), false);
    assert.equal(cache.kept(c1), undefined);
  });

  it('adds the work a cell accepted as its rep counts it: one container a piece', () => {
    const cache = new CellStateCache(1_000, () => 0);
    const c1 = presence('c1');
    cache.remember(c1, state('c1'));
    cache.accepted('c1', {
      lrps: [
        { process_guid: 'web', domain: 'd', index: 1, memory_mb: 64, disk_mb: 5, placement_tags: [] },
        { process_guid: 'api', domain: 'd', index: 0, memory_mb: 32, disk_mb: 0, placement_tags: [] },
      ],
      tasks: [{ task_guid: 't1', domain: 'd', memory_mb: 16, disk_mb: 1, placement_tags: [] }],
    });
    const kept = fresh(cache, c1);
    assert.deepEqual(kept?.used, { memory_mb: 212, disk_mb: 16, containers: 4 });
    assert.deepEqual(kept?.lrps, { web: 2, api: 1 });
    cache.accepted('c2', { lrps: [], tasks: [] });
    assert.equal(fresh(cache, presence('c2')), undefined, 'work for a cell never read keeps nothing');
  });

  it('forgets one cell, every cell, or the cells no longer live', () => {
    const cache = new CellStateCache(1_000, () => 0);
    for (const id of ['c1', 'c2', 'c3']) cache.remember(presence(id), state(id));
    cache.forget('c1');
    assert.equal(fresh(cache, presence('c1')), undefined);
    cache.keepOnly(new Set(['c2']));
    assert.equal(fresh(cache, presence('c3')), undefined);
    assert.ok(fresh(cache, presence('c2')));
    cache.clear();
    assert.equal(fresh(cache, presence('c2')), undefined);
  });
});
