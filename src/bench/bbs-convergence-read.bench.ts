/**
 * One full convergence read (every DesiredLRP and ActualLRP, one consistent snapshot) at growing
 * record counts up to 250,000 ActualLRPs, on SQLite and PostgreSQL in one run. Prints the median
 * read time and how memory (RSS, heap) grows with the record count.
 * Goal (issue 3): ≤ 1 s at 250,000 ActualLRPs on each backend.
 */
import { openBbsStore } from '../bbs/index.js';
import { benchBackends, median } from './bbs-bench-backends.js';

const steps = (process.env.BENCH_STEPS ?? '50000,250000').split(',').map(Number);
const instancesPerLrp = 100;
const reads = Number(process.env.BENCH_READS ?? 5);

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
    const seedSeconds = (Date.now() - seedStart) / 1000;
    global.gc?.();
    const before = process.memoryUsage();
    const times: number[] = [];
    let kept: unknown;
    for (let i = 0; i < reads; i++) {
      kept = undefined;
      const started = process.hrtime.bigint();
      const snapshot = await store.readSnapshot();
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (snapshot.actual_lrps.length !== target)
        throw new Error(`read ${snapshot.actual_lrps.length} of ${target}`);
      kept = snapshot;
    }
    const after = process.memoryUsage();
    const m = median(times);
    process.stdout.write(
      `${backend.name.padEnd(10)} ${String(target).padStart(7)} ActualLRPs + ${target / instancesPerLrp} DesiredLRPs: ` +
        `median read ${Math.round(m)} ms (reads: ${times.map(Math.round).join(', ')}; goal ≤ 1000 ms: ${m <= 1000 ? 'met' : 'NOT met'}); ` +
        `RSS ${mb(before.rss)} → ${mb(after.rss)} (+${mb(after.rss - before.rss)}), heap used ${mb(after.heapUsed)}; ` +
        `seeded in ${seedSeconds.toFixed(1)} s\n`,
    );
    void kept;
  }
  await store.close();
  await backend.cleanup();
}
