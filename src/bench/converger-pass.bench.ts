/**
 * One convergence pass (issue 4): the converger's own `runOnce` — read the BBS snapshot and the
 * tasks, plan, apply — at 250,000 RUNNING ActualLRPs on 50 live cells, on SQLite and PostgreSQL.
 * First the steady state (nothing to do: the pass is the read and the plan), then a disturbed one
 * (a cell's presence gone with its 5,000 instances, and 1,000 fresh crashes), whose single pass
 * also writes every repair. Goal: ≤ 2 s per pass at 250,000 on SQLite.
 */
import { cpus, loadavg } from 'node:os';
import { sql } from 'kysely';
import { openBbsStore } from '../bbs/index.js';
import { ConvergerService, defaultConvergenceConfig } from '../converger/index.js';
import { benchBackends, median } from './bbs-bench-backends.js';
import { seedRunningLrps } from './bbs-seed.js';

const target = Number(process.env.BENCH_ACTUALS ?? 250_000);
const passes = Number(process.env.BENCH_PASSES ?? 5);
const cellCount = 50;

const ms = (started: bigint) => Number(process.hrtime.bigint() - started) / 1e6;

for (const backend of await benchBackends()) {
  const store = await openBbsStore(backend.db);
  const seedStart = Date.now();
  await seedRunningLrps(store, 0, target, cellCount);
  await store.upsertDomain({ domain: 'bench', ttl_ms: 0 });
  const presence = (i: number) => ({
    cell_id: `cell-${i}`,
    zone: `z${i % 3}`,
    capacity: { memory_mb: 1_000_000, disk_mb: 1_000_000, containers: 10_000 },
    rep_url: `http://127.0.0.1:${20_000 + i}`,
    placement_tags: [],
  });
  for (let i = 0; i < cellCount; i++) await store.heartbeatCell({ presence: presence(i), ttl_ms: 3_600_000 });
  const seedSeconds = (Date.now() - seedStart) / 1000;

  const converger = new ConvergerService({
    bbs: store,
    config: { ...defaultConvergenceConfig, intervalMs: 30_000 },
  });
  const steady: number[] = [];
  for (let i = 0; i < passes; i++) {
    const started = process.hrtime.bigint();
    const report = await converger.runOnce();
    steady.push(ms(started));
    const acted = report.applied + report.conflicts + report.errors;
    if (acted !== 0) throw new Error(`a steady pass acted: ${JSON.stringify(report)}`);
  }
  const m = median(steady);
  process.stdout.write(
    `${backend.name.padEnd(10)} ${target} RUNNING ActualLRPs, ${cellCount} cells, steady pass: median ${Math.round(m)} ms ` +
      `(passes: ${steady.map(Math.round).join(', ')}; goal ≤ 2000 ms: ${m <= 2000 ? 'met' : 'NOT met'}); ` +
      `seeded in ${seedSeconds.toFixed(1)} s; load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs\n`,
  );

  // Disturbed: cell-7 leaves (its instances must be unclaimed and started elsewhere) and 1,000
  // instances on other cells have just crashed once (restarted at once under the crash policy).
  await store.removeCell({ cell_id: 'cell-7' });
  await sql`UPDATE actual_lrps SET state = 'CRASHED', crash_count = 1, cell_id = '', instance_guid = '',
    crash_reason = 'exit status 1', tag_index = tag_index + 1
    WHERE idx = 8 AND process_guid IN (SELECT process_guid FROM desired_lrps ORDER BY process_guid LIMIT 1000)`.execute(
    store.backend.db,
  );
  const started = process.hrtime.bigint();
  const report = await converger.runOnce();
  const disturbed = ms(started);
  process.stdout.write(
    `${backend.name.padEnd(10)} disturbed pass: ${Math.round(disturbed)} ms, planned ${JSON.stringify(report.planned)}, ` +
      `applied ${report.applied}, conflicts ${report.conflicts}, errors ${report.errors}\n`,
  );
  await store.close();
  await backend.cleanup();
}
