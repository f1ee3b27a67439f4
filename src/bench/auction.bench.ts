/**
 * `npm run bench auction [runs]`: one auction batch of 10,000 LRP instances over 1,000 empty cells
 * in 3 zones (issue 4's performance goal: under 2 s per batch, max/min memory use per cell ≤ 1.2).
 * The workload is seeded, so every run places the same instances.
 */
import { performance } from 'node:perf_hooks';
import { type AuctionResult, auction, type CellState, type LRPAuctionWork } from '../auctioneer/index.js';

/** mulberry32: a tiny seeded PRNG, so the workload is the same on every machine. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const zones = ['z1', 'z2', 'z3'];
const CELLS = 1000;
const INSTANCES = 10_000;

function workload(): { cells: CellState[]; lrps: LRPAuctionWork[] } {
  const rand = prng(42);
  const cells: CellState[] = [];
  for (let i = 0; i < CELLS; i++) {
    cells.push({
      cell_id: `cell-${String(i).padStart(4, '0')}`,
      zone: zones[i % zones.length] as string,
      capacity: { memory_mb: 32_768, disk_mb: 131_072, containers: 256 },
      used: { memory_mb: 0, disk_mb: 0, containers: 0 },
      lrps: {},
      evacuating: false,
      placement_tags: [],
      optional_placement_tags: [`cell:${String(i).padStart(4, '0')}`],
    });
  }
  const sizes = [128, 256, 512, 1024, 2048];
  const lrps: LRPAuctionWork[] = [];
  for (let app = 0; lrps.length < INSTANCES; app++) {
    // Apps of 1 to 40 instances, of one of five memory sizes: a mixed, realistic batch.
    const instances = Math.min(1 + Math.floor(rand() * 40), INSTANCES - lrps.length);
    const memory_mb = sizes[Math.floor(rand() * sizes.length)] as number;
    for (let index = 0; index < instances; index++) {
      lrps.push({
        kind: 'lrp',
        process_guid: `app-${app}`,
        domain: 'bench',
        index,
        memory_mb,
        disk_mb: memory_mb * 2,
        placement_tags: [],
      });
    }
  }
  return { cells, lrps };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

function main(): void {
  const runs = Number(process.argv[2] ?? 7);
  const { cells, lrps } = workload();
  const times: number[] = [];
  let result: AuctionResult | undefined;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    result = auction({ lrps, tasks: [] }, cells, { zones });
    times.push(performance.now() - t0);
  }
  if (result === undefined) return;
  const mem = new Map(cells.map((c) => [c.cell_id, 0]));
  const perCell = new Map<string, Set<string>>();
  let colocated = 0;
  for (const p of result.placements) {
    mem.set(p.cell_id, (mem.get(p.cell_id) ?? 0) + p.work.memory_mb);
    const guid = p.work.kind === 'lrp' ? p.work.process_guid : p.work.task_guid;
    const set = perCell.get(p.cell_id) ?? new Set<string>();
    if (set.has(guid)) colocated++;
    set.add(guid);
    perCell.set(p.cell_id, set);
  }
  const uses = [...mem.values()];
  const max = Math.max(...uses);
  const min = Math.min(...uses);
  console.log(
    `auction: ${lrps.length} instances over ${cells.length} cells in ${zones.length} zones, ${runs} runs`,
  );
  console.log(
    `  time per batch: median ${median(times).toFixed(1)} ms (min ${Math.min(...times).toFixed(1)}, max ${Math.max(...times).toFixed(1)}) — goal < 2000 ms`,
  );
  console.log(`  placed ${result.placements.length}, failed ${result.failures.length}`);
  console.log(
    `  balance: memory per cell max ${max} MB / min ${min} MB = ${(min > 0 ? max / min : Number.POSITIVE_INFINITY).toFixed(3)} — goal ≤ 1.2`,
  );
  console.log(`  instances sharing a cell with another instance of their app: ${colocated}`);
}

main();
