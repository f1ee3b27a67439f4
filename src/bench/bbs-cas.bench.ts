/**
 * CAS throughput of the BBS store with 8 concurrent writers, on SQLite and PostgreSQL in one run.
 * Each writer owns one ActualLRP and moves it RUNNING → RUNNING (new net info) with its tag, the
 * way a rep reports an instance: every operation is one transaction with a CAS and an event.
 * Goals (issue 3): ≥ 5,000 CAS/s on SQLite, ≥ 2,000 CAS/s on PostgreSQL. Prints medians.
 */
import { cpus, loadavg } from 'node:os';
import { type ActualLRP, openBbsStore } from '../bbs/index.js';
import { benchBackends, median } from './bbs-bench-backends.js';

const writers = 8;
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const roundMs = Number(process.env.BENCH_ROUND_MS ?? 2000);

for (const backend of await benchBackends()) {
  const store = await openBbsStore(backend.db, { poolSize: writers });
  const lrps: ActualLRP[] = [];
  for (let w = 0; w < writers; w++) {
    const process_guid = `bench-${w}`;
    await store.desireLRP({
      process_guid,
      domain: 'bench',
      instances: 1,
      image: 'busybox',
      env: {},
      memory_mb: 64,
      disk_mb: 0,
      ports: [8080],
      routes: {},
      annotation: '',
      start_timeout_s: 60,
      placement_tags: [],
    });
    const [unclaimed] = await store.listActualLRPs({ process_guid });
    lrps.push(
      await store.startActualLRP({
        process_guid,
        index: 0,
        expected: unclaimed!.modification_tag,
        instance_key: { instance_guid: `ig-${w}`, cell_id: 'cell-1' },
        net_info: { address: '10.0.0.1', ports: [{ container_port: 8080, host_port: 61000 }] },
      }),
    );
  }
  const rates: number[] = [];
  const cpuPerOp: number[] = [];
  for (let round = 0; round < rounds; round++) {
    let done = 0;
    const cpuBefore = process.cpuUsage();
    const deadline = Date.now() + roundMs;
    const started = process.hrtime.bigint();
    await Promise.all(
      lrps.map(async (_, w) => {
        while (Date.now() < deadline) {
          const current = lrps[w]!;
          lrps[w] = await store.startActualLRP({
            process_guid: current.process_guid,
            index: 0,
            expected: current.modification_tag,
            instance_key: { instance_guid: `ig-${w}`, cell_id: 'cell-1' },
            net_info: {
              address: '10.0.0.1',
              ports: [{ container_port: 8080, host_port: 61000 + (done % 1000) }],
            },
          });
          done++;
        }
      }),
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    rates.push(done / seconds);
    const cpu = process.cpuUsage(cpuBefore);
    cpuPerOp.push((cpu.user + cpu.system) / done);
  }
  const goal = backend.name === 'SQLite' ? 5000 : 2000;
  const m = median(rates);
  process.stdout.write(
    `${backend.name.padEnd(10)} ${writers} writers: median ${Math.round(m)} CAS/s over ${rounds} rounds of ${roundMs} ms ` +
      `(rounds: ${rates.map((r) => Math.round(r)).join(', ')}; goal ≥ ${goal}: ${m >= goal ? 'met' : 'NOT met'}); ` +
      // This process's CPU per CAS: on a shared machine, throughput falls with the CPU share we
      // get; this figure does not. (PostgreSQL's own CPU is not in it.)
      `node CPU ${Math.round(median(cpuPerOp))} µs/CAS; load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs\n`,
  );
  await store.close();
  await backend.cleanup();
}
