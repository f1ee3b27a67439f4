/**
 * `npm run bench convergence-plan [runs]`: the pure convergence plan over 250,000 ActualLRPs
 * (25,000 DesiredLRPs × 10 instances on 1,000 cells), with a seeded mix of what a pass meets:
 * vanished cells, holes, extra indices, CRASHED instances on the back-off, stale UNCLAIMED ones.
 * This measures the decision logic only; issue 4's "≤ 2 s on SQLite" adds the store's reads.
 */
import { performance } from 'node:perf_hooks';
import type { ActualLRP, ActualLRPState, CellPresence, DesiredLRP, Domain, Task } from '../bbs/index.js';
import { defaultConvergenceConfig, planConvergence } from '../converger/index.js';

const now = new Date('2024-06-01T12:00:00.000Z');
const iso = (offsetMs: number): string => new Date(now.getTime() + offsetMs).toISOString();
const tag = { epoch: 'e', index: 1 };

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

function world(): {
  desired: DesiredLRP[];
  actuals: ActualLRP[];
  cells: CellPresence[];
  domains: Domain[];
  tasks: Task[];
} {
  const rand = prng(7);
  const cells: CellPresence[] = [];
  // 1,000 cells; the last 10 have vanished (expired presence).
  for (let i = 0; i < 1000; i++) {
    cells.push({
      cell_id: `cell-${i}`,
      zone: `z${i % 3}`,
      capacity: { memory_mb: 32_768, disk_mb: 131_072, containers: 256 },
      rep_url: `http://cell-${i}`,
      placement_tags: [],
      expires_at: iso(i < 990 ? 30_000 : -1),
    });
  }
  const desired: DesiredLRP[] = [];
  const actuals: ActualLRP[] = [];
  for (let d = 0; d < 25_000; d++) {
    const process_guid = `app-${d}`;
    const domain = d % 10 === 0 ? 'stale' : 'apps';
    // A few DesiredLRPs were scaled down (extras) or up (holes) since the last pass.
    const r = rand();
    const instances = r < 0.02 ? 8 : r < 0.04 ? 12 : 10;
    desired.push({
      process_guid,
      domain,
      instances,
      image: 'img',
      env: {},
      memory_mb: 256,
      disk_mb: 512,
      ports: [8080],
      routes: {},
      annotation: '',
      start_timeout_s: 60,
      placement_tags: [],
      created_at: iso(-3_600_000),
      modification_tag: tag,
    });
    for (let index = 0; index < 10; index++) {
      const x = rand();
      const state: ActualLRPState =
        x < 0.9 ? 'RUNNING' : x < 0.95 ? 'UNCLAIMED' : x < 0.97 ? 'CLAIMED' : 'CRASHED';
      const placed = state === 'RUNNING' || state === 'CLAIMED';
      actuals.push({
        process_guid,
        index,
        domain,
        instance_guid: `${process_guid}-${index}`,
        cell_id: placed ? `cell-${Math.floor(rand() * 1000)}` : '',
        state,
        crash_count: state === 'CRASHED' ? 3 + Math.floor(rand() * 10) : 0,
        last_crashed_at: state === 'CRASHED' ? iso(-Math.floor(rand() * 1_200_000)) : null,
        crash_reason: '',
        since: iso(-Math.floor(rand() * 120_000)),
        placement_error: '',
        address: '',
        ports: [],
        evacuating: false,
        modification_tag: tag,
      });
    }
  }
  const domains: Domain[] = [
    { domain: 'apps', fresh_until: iso(120_000) },
    { domain: 'stale', fresh_until: iso(-1) },
  ];
  return { desired, actuals, cells, domains, tasks: [] };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

function main(): void {
  const runs = Number(process.argv[2] ?? 7);
  const w = world();
  const times: number[] = [];
  let counts: Record<string, number> = {};
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const plan = planConvergence({ ...w, now, config: defaultConvergenceConfig });
    times.push(performance.now() - t0);
    counts = {};
    for (const item of plan.lrps) counts[item.kind] = (counts[item.kind] ?? 0) + 1;
  }
  console.log(
    `convergence plan: ${w.actuals.length} ActualLRPs, ${w.desired.length} DesiredLRPs, ${w.cells.length} cells, ${runs} runs`,
  );
  console.log(
    `  time per pass: median ${median(times).toFixed(1)} ms (min ${Math.min(...times).toFixed(1)}, max ${Math.max(...times).toFixed(1)})`,
  );
  console.log(
    `  plan: ${Object.entries(counts)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
}

main();
