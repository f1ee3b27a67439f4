/**
 * `npm run bench tasks [COUNT] [CELLS]`: COUNT (default 1,000) tiny tasks (`/bin/true`) end to end
 * on CELLS (default 3) local cells with real runc containers: throughput and the PENDING →
 * COMPLETED latency (created_at → first_completed_at) at p50 and p99, on SQLite and PostgreSQL
 * (`BENCH_BACKENDS=sqlite` for one). Server and cells share this process and its event loop.
 * `TASKS_PROGRESS_S=N` prints the run's progress every N seconds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterSingletons, startBbsServer } from '../api/index.js';
import { type RunningCell, startCell } from '../rep/index.js';
import { makeBusyboxRootfs } from '../runtime/busybox-rootfs.js';
import { openImageStore } from '../runtime/image/index.js';
import { type BenchBackend, onEachBackend } from './bbs-bench-backends.js';
import { closeCells, fmt, machineBusySeconds, processUsage } from './bench-util.js';

const count = Number(process.argv[2] ?? 1000);
const cellCount = Number(process.argv[3] ?? 3);
/**
 * Per cell: more at once only adds CPU contention on a small machine (300 at once took a 2-core
 * host to a load of 300). `TASKS_PER_CELL` sets it.
 */
const containersPerCell = Number(process.env.TASKS_PER_CELL ?? 16);

/**
 * `TASKS_PROGRESS_S=N`: a line every N seconds with the tasks by state, the completions a second
 * since the last line and the machine's CPU, which shows a run's shape (a stall, a slowdown) that
 * its totals hide. It found a burst stalling for 25 s at its 30th second (docs/performance.md).
 */
function progressPrinter(started: number): (tasks: Readonly<Record<string, number>>) => void {
  const everyMs = Number(process.env.TASKS_PROGRESS_S ?? 0) * 1000;
  if (!(everyMs > 0)) return () => {};
  let last = { at: started, completed: 0, busy: machineBusySeconds() };
  return (tasks) => {
    const at = Date.now();
    if (at - last.at < everyMs) return;
    const completed = tasks.COMPLETED ?? 0;
    const busy = machineBusySeconds();
    const seconds = (at - last.at) / 1000;
    const states = Object.entries(tasks)
      .map(([state, n]) => `${state} ${n}`)
      .join(', ');
    console.log(
      `  ${fmt(at - started)}: ${states}; ${((completed - last.completed) / seconds).toFixed(1)} completed a second, the machine ${((100 * (busy - last.busy)) / seconds).toFixed(0)} % busy`,
    );
    last = { at, completed, busy };
  };
}

async function measure(backend: BenchBackend): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'berth-bench-tasks-'));
  const server = await startBbsServer({
    db: backend.db,
    listen: '127.0.0.1:0',
    logger: false,
    auth: 'none',
    // COMPLETED tasks are kept for the whole run (the default TTL of 2 min would delete them before
    // a 1,000-task run ends, and the bench reads their timestamps). Other intervals are the
    // defaults: new work wakes the auctioneer, finished containers report at once.
    singletons: (store) => clusterSingletons(store, { taskCompletedTtlMs: 3_600_000 }),
  });
  const cells: RunningCell[] = [];
  try {
    for (let i = 0; i < cellCount; i++) {
      const dir = join(root, `cell${i}`);
      const images = openImageStore(dir);
      await images.importRootfs(makeBusyboxRootfs(join(dir, 'rootfs-src')), 'bb:1');
      cells.push(
        await startCell({
          bbs: server.store,
          cellId: `cell${i}`,
          zone: `z${i % 3}`,
          dataDir: dir,
          capacity: { memory_mb: 4096, disk_mb: 65536, containers: containersPerCell },
          images,
          listen: '127.0.0.1:0',
          address: '127.0.0.1',
        }),
      );
    }
    const started = Date.now();
    const busyAtStart = machineBusySeconds();
    // This process (server and cells); the rest of the machine's time is the pods' stage-1
    // holders (reused, so not reaped until the cells close), their runc and CNI plugins, the
    // apps and the kernel's work for them.
    const processAtStart = processUsage('self');
    // Made before the creates, so that its first window's CPU and completions cover the same time.
    const progress = progressPrinter(started);
    for (let i = 0; i < count; i++) {
      await server.store.desireTask({
        task_guid: `bench-${i}`,
        domain: 'bench',
        image: 'bb:1',
        command: ['/bin/true'],
        env: {},
        memory_mb: 8,
        disk_mb: 8,
        result_file: '',
        completion_callback_url: '',
        placement_tags: [],
      });
    }
    // Counted, not listed, while waiting: reading every task each round cost the one event loop
    // that server and cells share here seconds over a run (rowToTask in the profile).
    for (;;) {
      const { tasks } = await server.store.countRecords();
      progress(tasks);
      if (tasks.COMPLETED >= count) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const elapsed = Date.now() - started;
    const busy = machineBusySeconds() - busyAtStart;
    const ownCpu = processUsage('self').cpuSeconds - processAtStart.cpuSeconds;
    const perTask = (seconds: number) => fmt((seconds * 1000) / count);
    const completed = (await server.store.listTasks({ domain: 'bench' })).filter(
      (t) => t.state === 'COMPLETED',
    );
    const latencies = completed.map(
      (t) => Date.parse(t.first_completed_at ?? t.updated_at) - Date.parse(t.created_at),
    );
    const failed = completed.filter((t) => t.failed).length;
    if (failed > 0) console.log(`${failed} tasks failed: ${completed.find((t) => t.failed)?.failure_reason}`);
    latencies.sort((a, b) => a - b);
    const pct = (p: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? Number.NaN;
    console.log(
      `${backend.name.padEnd(10)}  ${count} tasks on ${cellCount} cells: ${fmt(elapsed)} total, ${(count / (elapsed / 1000)).toFixed(1)} tasks/s; PENDING → COMPLETED p50 ${fmt(pct(50))}, p99 ${fmt(pct(99))}; the machine's CPU ${perTask(busy)} per task (${containersPerCell} at once per cell), of which server and cells ${perTask(ownCpu)}, the rest (holders, runc, CNI plugins, apps) ${perTask(busy - ownCpu)}`,
    );
  } finally {
    await closeCells(cells);
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
}

await onEachBackend(measure);
