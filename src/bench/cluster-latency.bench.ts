/**
 * `npm run bench cluster-latency [TRIES]`: single-instance latency on an idle cluster, one real
 * cell with real runc containers, on SQLite and PostgreSQL in the same run:
 * - desire → RUNNING: `POST /v1/desired_lrps` of one busybox instance until its ActualLRP is
 *   RUNNING (then `DELETE` and wait until the cell has no container, so every try starts idle);
 * - task submit → COMPLETED: `POST /v1/tasks` running `/bin/true` until the task is COMPLETED.
 * TRIES (default 50) of each, p50 and p99. The server runs with its default intervals (auction
 * 500 ms, convergence 30 s) and the cell with its default poll (5 s): what is measured is the
 * event-driven path, not a poll. The cell talks to the server over HTTP as `berth cell` does,
 * but runs in this process (one event loop for both).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BbsServer, clusterSingletons, startBbsServer } from '../api/index.js';
import { BbsClient } from '../bbs/index.js';
import { type RunningCell, startCell } from '../rep/index.js';
import { makeBusyboxRootfs } from '../runtime/busybox-rootfs.js';
import { openImageStore } from '../runtime/image/index.js';
import { onEachBackend } from './bbs-bench-backends.js';
import { closeCells, fmt } from './bench-util.js';

const tries = Number(process.argv[2] ?? 50);

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** Resolves once `check` holds, looking again after every committed event (and every 200 ms). */
function until(server: BbsServer, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let busy = false;
    let again = false;
    const deadline = setTimeout(() => finish(new Error('timed out')), timeoutMs);
    const safety = setInterval(() => look(), 200);
    const unsubscribe = server.store.onEvents(() => look());
    function finish(err?: Error): void {
      clearTimeout(deadline);
      clearInterval(safety);
      unsubscribe();
      if (err) reject(err);
      else resolve();
    }
    function look(): void {
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      check().then(
        (ok) => {
          busy = false;
          if (ok) finish();
          else if (again) {
            again = false;
            look();
          }
        },
        (err: unknown) => finish(err instanceof Error ? err : new Error(String(err))),
      );
    }
    look();
  });
}

async function post(server: BbsServer, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
}

async function measure(backend: { name: string; db: string }): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'berth-bench-latency-'));
  const server = await startBbsServer({
    db: backend.db,
    listen: '127.0.0.1:0',
    logger: false,
    auth: 'none',
    singletons: (store) => clusterSingletons(store),
  });
  let cell: RunningCell | undefined;
  try {
    const dir = join(root, 'cell');
    const images = openImageStore(dir);
    await images.importRootfs(makeBusyboxRootfs(join(dir, 'rootfs-src')), 'bb:1');
    cell = await startCell({
      bbs: new BbsClient(server.url),
      cellId: 'cell0',
      zone: 'z1',
      dataDir: dir,
      capacity: { memory_mb: 4096, disk_mb: 65536, containers: 64 },
      images,
      listen: '127.0.0.1:0',
      address: '127.0.0.1',
    });
    const running = cell;
    const lrp: number[] = [];
    /** Submit → CLAIMED (a task: RUNNING): the control plane's share, before the runtime's. */
    const lrpPlaced: number[] = [];
    const taskPlaced: number[] = [];
    for (let i = 0; i < tries; i++) {
      const guid = `lat-${i}`;
      const t0 = performance.now();
      await post(server, '/v1/desired_lrps', {
        process_guid: guid,
        domain: 'bench',
        instances: 1,
        image: 'bb:1',
        // Ends on SIGTERM, so the removal does not wait out the 10 s graceful stop.
        command: ['/bin/sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'],
        env: {},
        memory_mb: 8,
        disk_mb: 8,
        ports: [],
        routes: {},
        annotation: '',
        start_timeout_s: 60,
        placement_tags: [],
      });
      let claimedAt = Number.NaN;
      await until(server, async () => {
        const state = (await server.store.getActualLRP({ process_guid: guid, index: 0 })).instance?.state;
        if (state === 'CLAIMED' && Number.isNaN(claimedAt)) claimedAt = performance.now();
        return state === 'RUNNING';
      });
      lrp.push(performance.now() - t0);
      lrpPlaced.push(claimedAt - t0);
      const res = await fetch(`${server.url}/v1/desired_lrps/${guid}`, { method: 'DELETE' });
      if (res.status >= 300) throw new Error(`DELETE: ${res.status} ${await res.text()}`);
      await until(server, async () => running.executor.list().length === 0);
    }
    const task: number[] = [];
    for (let i = 0; i < tries; i++) {
      const guid = `lat-task-${i}`;
      const t0 = performance.now();
      await post(server, '/v1/tasks', {
        task_guid: guid,
        domain: 'bench',
        image: 'bb:1',
        command: ['/bin/true'],
        memory_mb: 8,
        disk_mb: 8,
      });
      let startedAt = Number.NaN;
      await until(server, async () => {
        const state = (await server.store.getTask({ task_guid: guid })).state;
        if (state === 'RUNNING' && Number.isNaN(startedAt)) startedAt = performance.now();
        return state === 'COMPLETED';
      });
      task.push(performance.now() - t0);
      taskPlaced.push(startedAt - t0);
      await until(server, async () => running.executor.list().length === 0);
    }
    const line = (what: string, values: number[]) => {
      // A step seen only in passing (RUNNING → COMPLETED between two looks) has no time: left out.
      const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
      console.log(
        `${backend.name.padEnd(10)}  ${what.padEnd(32)} p50 ${fmt(percentile(sorted, 50)).padStart(9)}  p99 ${fmt(percentile(sorted, 99)).padStart(9)}  (${sorted.length} tries)`,
      );
    };
    line('desire → RUNNING', lrp);
    line('  of which desire → CLAIMED', lrpPlaced);
    line('task → COMPLETED', task);
    line('  of which submit → task RUNNING', taskPlaced);
  } finally {
    await closeCells(cell ? [cell] : []);
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
}

await onEachBackend(measure);
