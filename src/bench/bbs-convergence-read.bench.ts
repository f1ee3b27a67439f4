/**
 * One full convergence read (every DesiredLRP and ActualLRP, one consistent snapshot) at growing
 * record counts up to 250,000 ActualLRPs, on SQLite and PostgreSQL in one run. Prints the median
 * read time and how memory (RSS, heap) grows with the record count.
 * Goal (issue 3): ≤ 1 s at 250,000 ActualLRPs on each backend.
 */
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { type BbsSnapshot, type ConvergenceSnapshot, openBbsStore } from '../bbs/index.js';
import { benchBackends, median } from './bbs-bench-backends.js';
import { instancesPerLrp, seedRunningLrps } from './bbs-seed.js';

// Memory per record is only measurable with a forced GC: re-run this file with --expose-gc.
if (typeof global.gc !== 'function') {
  const child = spawnSync(process.execPath, ['--expose-gc', ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(child.status ?? 1);
}
const gc = global.gc as () => void;

const steps = (process.env.BENCH_STEPS ?? '50000,250000').split(',').map(Number);
const reads = Number(process.env.BENCH_READS ?? 5);
const seedCells = 50;

let kept: BbsSnapshot | ConvergenceSnapshot | undefined;
function recordsIn(snapshot: BbsSnapshot | ConvergenceSnapshot): number {
  const settled = 'settled_instances' in snapshot ? snapshot.settled_instances : [];
  return snapshot.actual_lrps.length + settled.reduce((sum, s) => sum + s.count, 0);
}
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

for (const backend of await benchBackends()) {
  const store = await openBbsStore(backend.db);
  let seeded = 0;
  for (const target of steps) {
    const seedStart = Date.now();
    await seedRunningLrps(store, seeded, target, seedCells);
    seeded = target;
    // The seeded instances' cells are present, as a healthy cluster's are: their instances are
    // settled, which the converger's read counts instead of listing.
    for (let i = 0; i < seedCells; i++)
      await store.heartbeatCell({
        presence: {
          cell_id: `cell-${i}`,
          zone: 'z1',
          capacity: { memory_mb: 1_000_000, disk_mb: 1_000_000, containers: 10_000 },
          rep_url: `http://127.0.0.1:${20_000 + i}`,
          placement_tags: [],
        },
        ttl_ms: 3_600_000,
      });
    const seedSeconds = (Date.now() - seedStart) / 1000;
    // The converger's read (`readConvergenceSnapshot`, the goal) and, for comparison, the full
    // records (`readSnapshot`: crash reasons, placement errors, addresses and port JSON too).
    for (const [label, read] of [
      ['convergence read', () => store.readConvergenceSnapshot()],
      ['full-record read', () => store.readSnapshot()],
    ] as const) {
      const times: number[] = [];
      for (let i = 0; i < reads; i++) {
        gc();
        const started = process.hrtime.bigint();
        const snapshot = await read();
        times.push(Number(process.hrtime.bigint() - started) / 1e6);
        // The converger's read counts the settled instances it leaves out instead of listing them.
        const records = recordsIn(snapshot);
        if (records !== target) throw new Error(`read ${records} of ${target}`);
      }
      // The previous step's (or backend's) snapshot must be gone before the baseline.
      kept = undefined;
      gc();
      gc();
      const base = process.memoryUsage();
      kept = await read();
      gc();
      const held = process.memoryUsage();
      const perRecord = (held.heapUsed - base.heapUsed) / recordsIn(kept);
      const m = median(times);
      const goal = label === 'convergence read' ? `; goal ≤ 1000 ms: ${m <= 1000 ? 'met' : 'NOT met'}` : '';
      process.stdout.write(
        `${backend.name.padEnd(10)} ${String(target).padStart(7)} RUNNING ActualLRPs + ${target / instancesPerLrp} DesiredLRPs, ${label}: ` +
          `median ${Math.round(m)} ms (reads: ${times.map(Math.round).join(', ')}${goal}); ` +
          `a snapshot holds ${mb(held.heapUsed - base.heapUsed)} of heap (${Math.round(perRecord)} B per ActualLRP, ${kept.actual_lrps.length} listed), ` +
          `RSS ${mb(held.rss)}; seeded in ${seedSeconds.toFixed(1)} s; load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs\n`,
      );
    }
  }
  await store.close();
  await backend.cleanup();
}
