import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cellPlacementTag } from '../bbs/index.js';
import { auction, type CellState, type LRPAuctionWork, preferredZoneIndex } from './auction.js';

/**
 * Issue 23: a named volume pins an instance to the cell holding its data. The BBS writes its start
 * request with that cell's placement tag and `pinned_cell`; the auction places it there or nowhere,
 * and says why when it cannot. One row per case; each pinned row has an unpinned twin that lands
 * elsewhere, so the pin (not luck) is what placed it.
 */
function cell(id: string, zone: string, over: Partial<CellState> = {}): CellState {
  return {
    cell_id: id,
    zone,
    capacity: { memory_mb: 1024, disk_mb: 4096, containers: 10 },
    used: { memory_mb: 0, disk_mb: 0, containers: 0 },
    lrps: {},
    evacuating: false,
    placement_tags: [],
    optional_placement_tags: [cellPlacementTag(id)],
    ...over,
  };
}

/** A process guid whose index `index` prefers zone z1 of [z1, z2]. */
function guidPreferringFirstZone(index: number): string {
  for (let i = 0; ; i++) if (preferredZoneIndex(`db-${i}`, index, 2) === 0) return `db-${i}`;
}

function work(index: number, pinnedTo?: string): LRPAuctionWork {
  return {
    kind: 'lrp',
    process_guid: guidPreferringFirstZone(index),
    domain: 'd',
    index,
    memory_mb: 128,
    disk_mb: 128,
    placement_tags: pinnedTo === undefined ? [] : [cellPlacementTag(pinnedTo)],
    ...(pinnedTo !== undefined ? { pinned_cell: pinnedTo } : {}),
  };
}

const busy = { used: { memory_mb: 800, disk_mb: 3000, containers: 5 } };
const full = { used: { memory_mb: 1000, disk_mb: 4000, containers: 10 } };

interface Row {
  readonly name: string;
  readonly cells: readonly CellState[];
  readonly work: LRPAuctionWork;
  /** The cell it lands on, or the placement error it gets. */
  readonly expect: { readonly cell: string } | { readonly error: RegExp };
}

const rows: readonly Row[] = [
  {
    name: 'unpinned: the emptier cell wins (the twin of the next row)',
    cells: [cell('c1', 'z1', busy), cell('c2', 'z1')],
    work: work(0),
    expect: { cell: 'c2' },
  },
  {
    name: 'pinned to a busier cell: it goes back there, where its data is',
    cells: [cell('c1', 'z1', busy), cell('c2', 'z1')],
    work: work(0, 'c1'),
    expect: { cell: 'c1' },
  },
  {
    name: 'unpinned index 2: kept in its preferred zone (the twin of the next row)',
    cells: [cell('c1', 'z1', full), cell('c2', 'z2')],
    work: work(2),
    expect: { error: /no room in zone z1/ },
  },
  {
    name: "pinned index 2: its cell's zone, whichever it is",
    cells: [cell('c1', 'z1', full), cell('c2', 'z2')],
    work: work(2, 'c2'),
    expect: { cell: 'c2' },
  },
  {
    name: 'pinned to an evacuating cell: waits, and the error names the cell',
    cells: [cell('c1', 'z1', { evacuating: true }), cell('c2', 'z1')],
    work: work(0, 'c1'),
    expect: { error: /^pinned to cell c1 by its named volumes, which is evacuating: it waits/ },
  },
  {
    name: 'pinned to a cell that is gone: waits, and the error names the cell',
    cells: [cell('c2', 'z1'), cell('c3', 'z1')],
    work: work(0, 'c1'),
    expect: { error: /^pinned to cell c1 by its named volumes, which is gone: .*berth volume unpin/ },
  },
  {
    name: 'pinned to a cell that now requires a tag the work lacks: waits, saying so',
    cells: [cell('c1', 'z1', { placement_tags: ['gpu'] }), cell('c2', 'z1')],
    work: work(0, 'c1'),
    expect: { error: /^pinned to cell c1 by its named volumes, whose placement tags it does not match/ },
  },
  {
    name: 'pinned to a full cell: waits for room there, never takes another',
    cells: [cell('c1', 'z1', full), cell('c2', 'z1')],
    work: work(0, 'c1'),
    expect: { error: /^pinned to cell c1 by its named volumes, which has no room for it/ },
  },
];

describe('auction: a named volume pins its instance to its cell (issue 23)', () => {
  for (const row of rows) {
    it(row.name, () => {
      const result = auction({ lrps: [row.work], tasks: [] }, row.cells, { zones: ['z1', 'z2'] });
      if ('cell' in row.expect) {
        assert.deepEqual(result.failures, []);
        assert.equal(result.placements[0]?.cell_id, row.expect.cell);
      } else {
        assert.deepEqual(result.placements, []);
        assert.match(result.failures[0]?.reason ?? '', row.expect.error);
      }
    });
  }
});
