import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  type AuctionResult,
  type AuctionWork,
  auction,
  type CellState,
  guidHash,
  type LRPAuctionWork,
  lrpWorkFromStartRequest,
  preferredZoneIndex,
  type TaskAuctionWork,
} from './auction.js';

const zones = ['z1', 'z2', 'z3'] as const;

function cell(id: string, zone: string, over: Partial<CellState> = {}): CellState {
  return {
    cell_id: id,
    zone,
    capacity: { memory_mb: 1024, disk_mb: 4096, containers: 10 },
    used: { memory_mb: 0, disk_mb: 0, containers: 0 },
    lrps: {},
    evacuating: false,
    placement_tags: [],
    optional_placement_tags: [`cell:${id}`],
    ...over,
  };
}

function lrp(
  process_guid: string,
  index: number,
  memory_mb = 128,
  placement_tags: readonly string[] = [],
): LRPAuctionWork {
  return { kind: 'lrp', process_guid, domain: 'd', index, memory_mb, disk_mb: 128, placement_tags };
}

function task(task_guid: string, memory_mb = 64): TaskAuctionWork {
  return { kind: 'task', task_guid, domain: 'd', memory_mb, disk_mb: 64, placement_tags: [] };
}

/** A process_guid whose preferred zone for index 0 is `zone` (3 zones). */
function guidPreferring(zone: number): string {
  for (let i = 0; ; i++) {
    const g = `app-${i}`;
    if (preferredZoneIndex(g, 0, 3) === zone) return g;
  }
}

describe('auction: zones', () => {
  it('PreferredZone = (f(guid) + index) % NZones with a stable FNV-1a f', () => {
    assert.equal(guidHash(''), 0x811c9dc5);
    assert.equal(guidHash('a'), 0xe40c292c);
    const g = 'web';
    const f = guidHash(g) % 3;
    for (let index = 0; index < 6; index++) assert.equal(preferredZoneIndex(g, index, 3), (f + index) % 3);
  });
  it('spreads indices 0..5 of one app over the three zones, two each', () => {
    const g = guidPreferring(0);
    const cells = zones.flatMap((z) => [cell(`${z}-a`, z), cell(`${z}-b`, z)]);
    const { placements, failures } = auction(
      { lrps: [0, 1, 2, 3, 4, 5].map((i) => lrp(g, i)), tasks: [] },
      cells,
      {
        zones,
      },
    );
    assert.equal(failures.length, 0);
    for (const p of placements) {
      const w = p.work as LRPAuctionWork;
      assert.equal(p.cell_id.slice(0, 2), zones[w.index % 3]);
    }
    assert.equal(new Set(placements.map((p) => p.cell_id)).size, 6, 'no two instances on one cell');
  });
  it('index ≤ 1 falls back to another zone when its zone has no room', () => {
    const g = guidPreferring(0);
    const cells = [
      cell('z1-full', 'z1', { used: { memory_mb: 1024, disk_mb: 0, containers: 0 } }),
      cell('z2-a', 'z2'),
    ];
    const r = auction({ lrps: [lrp(g, 0)], tasks: [] }, cells, { zones });
    assert.deepEqual(
      r.placements.map((p) => p.cell_id),
      ['z2-a'],
    );
  });
  it('index > 1 must not leave its zone: failure "no room in zone Z"', () => {
    const g = guidPreferring(0);
    const cells = [cell('z2-a', 'z2'), cell('z3-a', 'z3')];
    const r = auction({ lrps: [lrp(g, 3)], tasks: [] }, cells, { zones });
    assert.deepEqual(r.placements, []);
    // No cell in z1 at all: nothing there could ever hold it, so it does not wait for room.
    assert.deepEqual(r.failures, [{ work: lrp(g, 3), reason: 'no room in zone z1', waitsForRoom: false }]);
  });
  it('work waits for room when an empty cell it may use could hold it, and only then', () => {
    const g = guidPreferring(0);
    const full = { memory_mb: 256, disk_mb: 1024, containers: 2 };
    const capacity = { memory_mb: 256, disk_mb: 4096, containers: 10 };
    const cells = ['z1', 'z2', 'z3'].map((z) => cell(`${z}-a`, z, { capacity, used: full }));
    const r = auction({ lrps: [lrp(g, 3), lrp(g, 0), lrp('big', 0, 512)], tasks: [task('t')] }, cells, {
      zones,
    });
    assert.deepEqual(r.placements, []);
    const byWork = new Map(
      r.failures.map((f) => [
        f.work.kind === 'lrp' ? `${f.work.process_guid}/${f.work.index}` : f.work.task_guid,
        f,
      ]),
    );
    assert.deepEqual(
      [...byWork].map(([k, f]) => [k, f.waitsForRoom, f.reason]).sort(),
      [
        [
          'big/0',
          false,
          'insufficient resources: no cell it may use could hold it (512 MB memory, 128 MB disk)',
        ],
        [`${g}/0`, true, 'insufficient resources: no cell in any zone has room'],
        [`${g}/3`, true, 'no room in zone z1'],
        ['t', true, 'insufficient resources: no cell in any zone has room'],
      ].sort(),
    );
  });
  it('a fallback never takes the room an index > 1 instance needs at home', () => {
    // z1 has room for one instance. An index-1 instance whose own zone z3 is full is listed first,
    // but falls back only after the index-3 instance of an app preferring z1 was placed there.
    const home = guidPreferring(0);
    const other = guidPreferring(1); // index 1 → zone (1 + 1) % 3 = z3, which is full
    const cells = [
      cell('z1-a', 'z1', { capacity: { memory_mb: 128, disk_mb: 4096, containers: 10 } }),
      cell('z2-a', 'z2', { capacity: { memory_mb: 0, disk_mb: 4096, containers: 10 } }),
      cell('z3-a', 'z3', { capacity: { memory_mb: 0, disk_mb: 4096, containers: 10 } }),
    ];
    const r = auction({ lrps: [lrp(other, 1), lrp(home, 3)], tasks: [] }, cells, { zones });
    const where = new Map(r.placements.map((p) => [(p.work as LRPAuctionWork).process_guid, p.cell_id]));
    assert.equal(where.get(home), 'z1-a');
    assert.deepEqual(
      r.failures.map((f) => [(f.work as LRPAuctionWork).process_guid, f.reason]),
      [[other, 'insufficient resources: no cell in any zone has room']],
    );
  });
});

describe('auction: cells', () => {
  it('never places on an evacuating cell', () => {
    const r = auction({ lrps: [lrp('a', 0)], tasks: [task('t')] }, [cell('c1', 'z1', { evacuating: true })], {
      zones,
    });
    assert.equal(r.placements.length, 0);
    assert.equal(r.failures.length, 2);
  });
  it('balances memory: the emptier cell wins', () => {
    const cells = [
      cell('c1', 'z1', { used: { memory_mb: 512, disk_mb: 0, containers: 1 } }),
      cell('c2', 'z1'),
    ];
    const r = auction({ lrps: [], tasks: [task('t')] }, cells, { zones: ['z1'] });
    assert.equal(r.placements[0]?.cell_id, 'c2');
  });
  it('avoids colocating instances of one DesiredLRP on a cell', () => {
    const cells = [
      cell('c1', 'z1'),
      cell('c2', 'z1', { used: { memory_mb: 256, disk_mb: 1024, containers: 2 }, lrps: { web: 1 } }),
    ];
    const r = auction({ lrps: [lrp('web', 0)], tasks: [] }, cells, { zones: ['z1'] });
    assert.equal(r.placements[0]?.cell_id, 'c1');
    const r2 = auction(
      { lrps: [lrp('web', 0)], tasks: [] },
      [
        cell('c1', 'z1', { lrps: { web: 1 } }),
        cell('c2', 'z1', { used: { memory_mb: 256, disk_mb: 1024, containers: 2 } }),
      ],
      { zones: ['z1'] },
    );
    assert.equal(r2.placements[0]?.cell_id, 'c2');
  });
  it('placement tags must match the cell exactly', () => {
    const cells = [cell('plain', 'z1'), cell('gpu', 'z1', { placement_tags: ['gpu'] })];
    const r = auction(
      { lrps: [lrp('ml', 0, 128, ['gpu']), lrp('web', 0), lrp('x', 0, 128, ['ssd'])], tasks: [] },
      cells,
      {
        zones: ['z1'],
      },
    );
    const where = new Map(r.placements.map((p) => [(p.work as LRPAuctionWork).process_guid, p.cell_id]));
    assert.equal(where.get('ml'), 'gpu');
    assert.equal(where.get('web'), 'plain');
    assert.deepEqual(r.failures, [
      {
        work: lrp('x', 0, 128, ['ssd']),
        reason: 'found no compatible cell for placement tags [ssd]',
        waitsForRoom: false,
      },
    ]);
  });
  it("optional tags: a cell takes work carrying them, but work never needs them (Diego's rule)", () => {
    const cells = [
      cell('c1', 'z1', { optional_placement_tags: ['cell:c1', 'ssd'] }),
      cell('c2', 'z1', { placement_tags: ['gpu'], optional_placement_tags: ['cell:c2'] }),
      cell('c3', 'z1'),
    ];
    const r = auction(
      {
        lrps: [
          lrp('pinned-c2', 0, 128, ['cell:c2']),
          lrp('pinned-c2-gpu', 0, 128, ['cell:c2', 'gpu']),
          lrp('pinned-c3', 0, 128, ['cell:c3']),
          lrp('ssd', 0, 128, ['ssd']),
          lrp('ssd-and-c3', 0, 128, ['ssd', 'cell:c3']),
          lrp('plain', 0, 600),
        ],
        tasks: [],
      },
      cells,
      { zones: ['z1'] },
    );
    const where = new Map(r.placements.map((p) => [(p.work as LRPAuctionWork).process_guid, p.cell_id]));
    assert.equal(where.get('pinned-c2-gpu'), 'c2', 'required gpu + optional cell:c2');
    assert.equal(where.get('pinned-c3'), 'c3');
    assert.equal(where.get('ssd'), 'c1', 'only c1 offers ssd');
    assert.notEqual(where.get('plain'), 'c2', 'untagged work never goes to a cell requiring gpu');
    assert.deepEqual(
      r.failures.map((f) => [(f.work as LRPAuctionWork).process_guid, f.reason]),
      [
        ['pinned-c2', 'found no compatible cell for placement tags [cell:c2]'],
        ['ssd-and-c3', 'found no compatible cell for placement tags [cell:c3, ssd]'],
      ],
    );
  });
  it('expands a start request to one work item per index', () => {
    const w = lrpWorkFromStartRequest({
      process_guid: 'p',
      domain: 'd',
      indices: [0, 4],
      memory_mb: 1,
      disk_mb: 2,
      placement_tags: [],
    });
    assert.deepEqual(
      w.map((x) => x.index),
      [0, 4],
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Properties

const cellArb = fc.record({
  zone: fc.constantFrom('z1', 'z2', 'z3', 'z9'),
  mem: fc.integer({ min: 0, max: 2048 }),
  disk: fc.integer({ min: 0, max: 2048 }),
  containers: fc.integer({ min: 0, max: 6 }),
  usedFrac: fc.double({ min: 0, max: 1, noNaN: true }),
  evacuating: fc.boolean(),
  tags: fc.constantFrom([], [], ['gpu']),
  optional: fc.constantFrom([], ['ssd'], ['gpu', 'ssd']),
  lrps: fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 0, max: 3 })),
});

const workArb: fc.Arbitrary<AuctionWork> = fc.oneof(
  fc.record({
    kind: fc.constant('lrp' as const),
    process_guid: fc.constantFrom('a', 'b', 'c', 'd'),
    domain: fc.constant('d'),
    index: fc.integer({ min: 0, max: 6 }),
    memory_mb: fc.integer({ min: 0, max: 700 }),
    disk_mb: fc.integer({ min: 0, max: 700 }),
    placement_tags: fc.constantFrom([], [], ['gpu'], ['ssd'], ['gpu', 'ssd']),
  }),
  fc.record({
    kind: fc.constant('task' as const),
    task_guid: fc.string({ minLength: 1, maxLength: 4 }),
    domain: fc.constant('d'),
    memory_mb: fc.integer({ min: 0, max: 700 }),
    disk_mb: fc.integer({ min: 0, max: 700 }),
    placement_tags: fc.constantFrom([], ['gpu'], ['ssd']),
  }),
);

const inputArb = fc.record({
  cells: fc.array(cellArb, { maxLength: 8 }),
  work: fc.array(workArb, { maxLength: 40 }),
});

type RawInput = { cells: CellRaw[]; work: AuctionWork[] };
type CellRaw = typeof cellArb extends fc.Arbitrary<infer C> ? C : never;

function build(input: RawInput): {
  cells: CellState[];
  lrps: LRPAuctionWork[];
  tasks: TaskAuctionWork[];
} {
  const cells = input.cells.map((c, i) =>
    cell(`c${i}`, c.zone, {
      capacity: { memory_mb: c.mem, disk_mb: c.disk, containers: c.containers },
      used: {
        memory_mb: Math.floor(c.mem * c.usedFrac),
        disk_mb: Math.floor(c.disk * c.usedFrac),
        containers: Math.floor(c.containers * c.usedFrac),
      },
      evacuating: c.evacuating,
      placement_tags: c.tags,
      optional_placement_tags: c.optional,
      lrps: c.lrps,
    }),
  );
  const lrps = input.work.filter((w): w is LRPAuctionWork => w.kind === 'lrp');
  const tasks = input.work.filter((w): w is TaskAuctionWork => w.kind === 'task');
  return { cells, lrps, tasks };
}

/** The rule, stated independently of the auction's code: required ⊆ work tags ⊆ required ∪ optional. */
function tagsMatch(c: CellState, w: AuctionWork): boolean {
  const offered = new Set([...c.placement_tags, ...c.optional_placement_tags]);
  return (
    c.placement_tags.every((t) => w.placement_tags.includes(t)) &&
    w.placement_tags.every((t) => offered.has(t))
  );
}

function run(input: { cells: CellState[]; lrps: LRPAuctionWork[]; tasks: TaskAuctionWork[] }): AuctionResult {
  return auction({ lrps: input.lrps, tasks: input.tasks }, input.cells, { zones });
}

describe('auction: properties', () => {
  it('never exceeds a cell capacity (memory, disk, containers) and never uses an evacuating cell', () => {
    fc.assert(
      fc.property(inputArb, (raw) => {
        const input = build(raw);
        const r = run(input);
        const byId = new Map(input.cells.map((c) => [c.cell_id, { ...c.used }]));
        for (const p of r.placements) {
          const c = input.cells.find((x) => x.cell_id === p.cell_id);
          assert.ok(c && !c.evacuating);
          const u = byId.get(p.cell_id) as { memory_mb: number; disk_mb: number; containers: number };
          u.memory_mb += p.work.memory_mb;
          u.disk_mb += p.work.disk_mb;
          u.containers += 1;
          assert.ok(u.memory_mb <= c.capacity.memory_mb && u.disk_mb <= c.capacity.disk_mb);
          assert.ok(u.containers <= c.capacity.containers);
        }
      }),
      { numRuns: 300 },
    );
  });
  it('index > 1 is always in its preferred zone, or failed with "no room in zone Z" / a tag mismatch', () => {
    fc.assert(
      fc.property(inputArb, (raw) => {
        const input = build(raw);
        const r = run(input);
        const zoneOf = new Map(input.cells.map((c) => [c.cell_id, c.zone]));
        for (const p of r.placements) {
          if (p.work.kind === 'lrp' && p.work.index > 1) {
            assert.equal(
              zoneOf.get(p.cell_id),
              zones[preferredZoneIndex(p.work.process_guid, p.work.index, 3)],
            );
          }
        }
        for (const f of r.failures) {
          if (f.work.kind === 'lrp' && f.work.index > 1) {
            const z = zones[preferredZoneIndex(f.work.process_guid, f.work.index, 3)];
            assert.ok(
              f.reason === `no room in zone ${z}` ||
                f.reason.startsWith('found no compatible cell') ||
                f.reason === 'no cells available',
              f.reason,
            );
          }
        }
      }),
      { numRuns: 300 },
    );
  });
  it('placements + failures = the input, each work item exactly once; tags match', () => {
    fc.assert(
      fc.property(inputArb, (raw) => {
        const input = build(raw);
        const r = run(input);
        const seen = new Set<AuctionWork>();
        for (const w of [...r.placements.map((p) => p.work), ...r.failures.map((f) => f.work)]) {
          assert.ok(!seen.has(w), 'a work item appears twice');
          seen.add(w);
        }
        assert.equal(seen.size, input.lrps.length + input.tasks.length);
        for (const w of [...input.lrps, ...input.tasks]) assert.ok(seen.has(w));
        const byId = new Map(input.cells.map((c) => [c.cell_id, c]));
        for (const p of r.placements) assert.ok(tagsMatch(byId.get(p.cell_id) as CellState, p.work));
      }),
      { numRuns: 300 },
    );
  });
  it('each placement took the lowest-score matching cell of its zone at that moment (heaps stay sorted)', () => {
    fc.assert(
      fc.property(inputArb, (raw) => {
        const input = build(raw);
        const r = run(input);
        const used = new Map(input.cells.map((c) => [c.cell_id, { ...c.used }]));
        const coloc = new Map(input.cells.map((c) => [c.cell_id, new Map(Object.entries(c.lrps))]));
        const frac = (u: number, cap: number) => (cap > 0 ? u / cap : 1);
        const score = (c: CellState, w: AuctionWork) => {
          const u = used.get(c.cell_id) as CellState['used'];
          const load = (frac(u.memory_mb, c.capacity.memory_mb) + frac(u.disk_mb, c.capacity.disk_mb)) / 2;
          return (
            load +
            (w.kind === 'lrp' ? ((coloc.get(c.cell_id) as Map<string, number>).get(w.process_guid) ?? 0) : 0)
          );
        };
        const fitsNow = (c: CellState, w: AuctionWork) => {
          const u = used.get(c.cell_id) as CellState['used'];
          return (
            u.memory_mb + w.memory_mb <= c.capacity.memory_mb &&
            u.disk_mb + w.disk_mb <= c.capacity.disk_mb &&
            u.containers + 1 <= c.capacity.containers
          );
        };
        for (const p of r.placements) {
          const chosen = input.cells.find((c) => c.cell_id === p.cell_id) as CellState;
          const rivals = input.cells.filter(
            (c) => !c.evacuating && c.zone === chosen.zone && tagsMatch(c, p.work) && fitsNow(c, p.work),
          );
          assert.ok(rivals.includes(chosen), 'the chosen cell matches and fits');
          for (const c of rivals) {
            const [a, b] = [score(chosen, p.work), score(c, p.work)];
            assert.ok(
              a < b || (a === b && chosen.cell_id <= c.cell_id),
              `${c.cell_id} beat ${chosen.cell_id}`,
            );
          }
          const u = used.get(p.cell_id) as { memory_mb: number; disk_mb: number; containers: number };
          u.memory_mb += p.work.memory_mb;
          u.disk_mb += p.work.disk_mb;
          u.containers += 1;
          if (p.work.kind === 'lrp') {
            const m = coloc.get(p.cell_id) as Map<string, number>;
            m.set(p.work.process_guid, (m.get(p.work.process_guid) ?? 0) + 1);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
  it('is deterministic: the same input gives the same plan, whatever the cell order', () => {
    fc.assert(
      fc.property(inputArb, (raw) => {
        const input = build(raw);
        const a = run(input);
        const b = run({ ...input, cells: [...input.cells].reverse() });
        assert.deepEqual(a, b);
      }),
      { numRuns: 200 },
    );
  });
  it('places work that fits somewhere when it is allowed to go there (no false failures for tasks)', () => {
    fc.assert(
      fc.property(inputArb, (raw) => {
        const input = build({ ...raw, work: raw.work.filter((w) => w.kind === 'task').slice(0, 1) });
        const r = run(input);
        const w = input.tasks[0];
        if (w === undefined) return;
        const fitsSomewhere = input.cells.some(
          (c) =>
            !c.evacuating &&
            tagsMatch(c, w) &&
            c.used.memory_mb + w.memory_mb <= c.capacity.memory_mb &&
            c.used.disk_mb + w.disk_mb <= c.capacity.disk_mb &&
            c.used.containers + 1 <= c.capacity.containers,
        );
        assert.equal(r.placements.length, fitsSomewhere ? 1 : 0);
      }),
      { numRuns: 300 },
    );
  });
});
