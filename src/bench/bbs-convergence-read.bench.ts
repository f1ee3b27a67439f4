/**
 * One full convergence read (every DesiredLRP and ActualLRP, one consistent snapshot) at growing
 * record counts up to 250,000 ActualLRPs, on SQLite and PostgreSQL in one run. Prints the median
 * read time and how memory (RSS, heap) grows with the record count.
 * Goal (issue 3): ≤ 1 s at 250,000 ActualLRPs on each backend.
 */
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { sql } from 'kysely';
import { type BbsSnapshot, openBbsStore } from '../bbs/index.js';
import { benchBackends, median } from './bbs-bench-backends.js';

// Memory per record is only measurable with a forced GC: re-run this file with --expose-gc.
if (typeof global.gc !== 'function') {
  const child = spawnSync(process.execPath, ['--expose-gc', ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(child.status ?? 1);
}
const gc = global.gc as () => void;

const steps = (process.env.BENCH_STEPS ?? '50000,250000').split(',').map(Number);
const instancesPerLrp = 100;
const reads = Number(process.env.BENCH_READS ?? 5);

let kept: BbsSnapshot | undefined;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

for (const backend of await benchBackends()) {
  const store = await openBbsStore(backend.db);
  let seeded = 0;
  for (const target of steps) {
    const seedStart = Date.now();
    for (; seeded < target; seeded += instancesPerLrp) {
      await store.desireLRP({
        process_guid: `lrp-${String(seeded / instancesPerLrp).padStart(6, '0')}`,
        domain: 'bench',
        instances: instancesPerLrp,
        image: 'registry.example/app:1',
        command: ['/app', '--port', '8080'],
        env: { PORT: '8080', MODE: 'production' },
        memory_mb: 256,
        disk_mb: 1024,
        ports: [8080],
        routes: { http: ['app.example.com'] },
        annotation: 'bench',
        monitor: { http: { port: 8080, path: '/healthz' } },
        start_timeout_s: 60,
        placement_tags: [],
      });
    }
    // A real cluster is mostly RUNNING: a cell, an instance guid, an address and a port mapping per
    // instance. Desiring made them UNCLAIMED (empty strings, no ports), which reads cheaper than
    // the real thing; the rep's CAS per instance would take minutes, so one UPDATE stands in.
    await sql`UPDATE actual_lrps SET state = 'RUNNING', cell_id = 'cell-' || (idx % 50),
      instance_guid = tag_epoch, address = '10.0.' || (idx % 200) || '.' || (idx % 250),
      ports = '[{"container_port":8080,"host_port":' || (61000 + idx) || '}]', tag_index = tag_index + 1
      WHERE state = 'UNCLAIMED'`.execute(store.backend.db);
    const seedSeconds = (Date.now() - seedStart) / 1000;
    const times: number[] = [];
    for (let i = 0; i < reads; i++) {
      gc();
      const started = process.hrtime.bigint();
      const snapshot = await store.readSnapshot();
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (snapshot.actual_lrps.length !== target)
        throw new Error(`read ${snapshot.actual_lrps.length} of ${target}`);
    }
    // The previous step's (or backend's) snapshot must be gone before the baseline.
    kept = undefined;
    gc();
    gc();
    const base = process.memoryUsage();
    kept = await store.readSnapshot();
    gc();
    const held = process.memoryUsage();
    const perRecord = (held.heapUsed - base.heapUsed) / kept.actual_lrps.length;
    const m = median(times);
    process.stdout.write(
      `${backend.name.padEnd(10)} ${String(target).padStart(7)} RUNNING ActualLRPs + ${target / instancesPerLrp} DesiredLRPs: ` +
        `median read ${Math.round(m)} ms (reads: ${times.map(Math.round).join(', ')}; goal ≤ 1000 ms: ${m <= 1000 ? 'met' : 'NOT met'}); ` +
        `a snapshot holds ${mb(held.heapUsed - base.heapUsed)} of heap (${Math.round(perRecord)} B per ActualLRP), ` +
        `RSS ${mb(held.rss)}; seeded in ${seedSeconds.toFixed(1)} s; load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs\n`,
    );
  }
  await store.close();
  await backend.cleanup();
}
