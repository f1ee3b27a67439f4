// `npm run bench cluster-scale`: a real `berth server` (SQLite, then PostgreSQL) and simulated cells
// in separate processes (src/testing/simulated-cells.ts: the real rep over a simulated executor).
// Measures a burst of desired instances to all RUNNING, the idle server at that size, and the
// replacement of the instances of cells killed with -9. Sizes come from the environment (below);
// the defaults are the issue's: 1,000 LRPs x 100 instances over 1,000 cells, 50 killed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BbsClient, cellPacing, defaultCellPacing } from '../bbs/index.js';
import { desiredDefinition } from '../testing/bbs-fixtures.js';
import {
  bbsRecordCounts,
  httpRequestCounts,
  type SimulatedCluster,
  startSimulatedCluster,
  waitUntil,
} from '../testing/simulated-cluster.js';
import { type BenchBackend, benchBackends } from './bbs-bench-backends.js';
import { fmt, machineBusySeconds, processUsage } from './bench-util.js';
import { printScaleFigures, type ScaleFigures } from './cluster-scale-report.js';

function envInt(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got ${text}`);
  return value;
}

const size = {
  cells: envInt('SCALE_CELLS', 1_000),
  cellsPerProcess: envInt('SCALE_CELLS_PER_PROCESS', 50),
  lrps: envInt('SCALE_LRPS', 1_000),
  instances: envInt('SCALE_INSTANCES', 100),
  killCells: envInt('SCALE_KILL_CELLS', 50),
  idleSeconds: envInt('SCALE_IDLE_S', 20),
  presenceTtlMs: envInt('SCALE_PRESENCE_TTL_MS', 10_000),
  pollIntervalMs: envInt('SCALE_POLL_MS', 5_000),
  startDelayMs: envInt('SCALE_START_DELAY_MS', 50),
  timeoutMs: envInt('SCALE_TIMEOUT_S', 600) * 1000,
  history: process.env.SCALE_HISTORY !== '0',
};
const total = size.lrps * size.instances;
// Room for 1.5 x the even share, so a cell's capacity never decides the spread.
const perCell = Math.ceil((1.5 * total) / size.cells) + 1;
const memoryMb = 16;
// The killed cells go a whole process at a time; their instances must fit on the cells left.
const killedProcesses = Math.max(1, Math.round(size.killCells / size.cellsPerProcess));
const killedCells = killedProcesses * size.cellsPerProcess;
if ((size.cells - killedCells) * perCell < total) {
  throw new Error(
    `SCALE_KILL_CELLS=${size.killCells} kills ${killedCells} of ${size.cells} cells (whole processes of ${size.cellsPerProcess}); the ${size.cells - killedCells} left have room for ${(size.cells - killedCells) * perCell} of the ${total} instances, so their replacement would never end`,
  );
}

async function running(url: string): Promise<number> {
  return (await bbsRecordCounts(url)).get('actual_lrp:RUNNING') ?? 0;
}

/**
 * How often the bench looks at the server while it waits. Each look is a `/metrics` (the record
 * counts: 30–50 ms of the server's event loop at 100,000 instances), and after a kill the killed
 * cells' lists as well: looks every 250–500 ms took a tenth to a fifth of the server's loop that
 * the bench was timing (docs/performance.md, round 17). A second is fine grain for figures of a
 * minute.
 */
const pollMs = 1_000;

/** `fn` over `items`, `width` at a time. */
async function eachLimited<T, R>(
  items: readonly T[],
  width: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i] as T);
      }
    }),
  );
  return results;
}

async function instancesPerCell(bbs: BbsClient, cellIds: readonly string[]): Promise<Map<string, number>> {
  const counts = await eachLimited(
    cellIds,
    16,
    async (id) => (await bbs.listActualLRPs({ cell_id: id })).length,
  );
  return new Map(cellIds.map((id, i) => [id, counts[i] ?? 0]));
}

/** The server's pacing flag `name` from SCALE_SERVER_ARGS, else its default. */
function serverRate(name: string, fallback: number): number {
  const args = (process.env.SCALE_SERVER_ARGS ?? '').split(' ').filter(Boolean);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg.startsWith(`--${name}=`)) return Number(arg.slice(name.length + 3));
    if (arg === `--${name}`) return Number(args[i + 1]);
  }
  return fallback;
}

/** What the server grants each cell at this size (src/bbs/cell-pacing.ts). */
function grantedPacing() {
  return cellPacing(size.cells, size.presenceTtlMs, {
    maxHeartbeatsPerSecond: serverRate('max-heartbeats-per-second', defaultCellPacing.maxHeartbeatsPerSecond),
    maxCellPassesPerSecond: serverRate(
      'max-cell-passes-per-second',
      defaultCellPacing.maxCellPassesPerSecond,
    ),
  });
}

/** The TTL the server grants each cell at this size: the one the goal is measured against. */
function grantedTtlMs(): number {
  return grantedPacing().ttl_ms;
}

/**
 * How long after the burst until every cell has passed once since (one pass interval, the
 * rep's or the server's pacing's, whichever is longer, plus 5 s). Until then passes still find
 * their cell's records changed by the burst and bring the lists back: the end of the burst, not
 * the steady state (at 1,000 cells it is 55 s, and the idle figure measured from the burst's end
 * was half again what it is once they are done).
 */
function settleMs(): number {
  return Math.max(size.pollIntervalMs, grantedPacing().min_poll_interval_ms) + 5_000;
}

async function runBackend(backend: BenchBackend): Promise<ScaleFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-scale-'));
  const profileDir = process.env.SCALE_CPU_PROF;
  let cluster: SimulatedCluster | undefined;
  try {
    const started = Date.now();
    cluster = await startSimulatedCluster({
      dir,
      db: backend.db,
      cells: size.cells,
      cellsPerProcess: size.cellsPerProcess,
      capacity: { memory_mb: perCell * memoryMb, disk_mb: 1_000_000, containers: perCell },
      behaviour: { startDelayMs: size.startDelayMs },
      pollIntervalMs: size.pollIntervalMs,
      presenceTtlMs: size.presenceTtlMs,
      history: size.history,
      serverArgs: (process.env.SCALE_SERVER_ARGS ?? '').split(' ').filter(Boolean),
      ...(profileDir ? { serverNodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}),
      ...(process.env.SCALE_SERVER_LOG ? { serverLogFile: process.env.SCALE_SERVER_LOG } : {}),
    });
    const { server, hosts } = cluster;
    const pid = server.child.pid ?? 0;
    const bbs = new BbsClient(server.url, { timeoutMs: 120_000 });
    process.stdout.write(
      `${backend.name}: ${size.cells} cells in ${cluster.hosts.length} processes up in ${fmt(Date.now() - started)}\n`,
    );

    // Burst: every LRP desired at once (16 requests in flight), timed until all instances RUN.
    const requestsBefore = await httpRequestCounts(server.url);
    const before = processUsage(pid);
    const cellsCpu = () =>
      hosts.reduce((sum, h) => sum + (h.child.pid ? processUsage(h.child.pid).cpuSeconds : 0), 0);
    const cellsBefore = cellsCpu();
    const machineBefore = machineBusySeconds();
    let peakRss = before.rssBytes;
    const t0 = Date.now();
    const lrpGuids = Array.from({ length: size.lrps }, (_, i) => `scale-${i}`);
    await eachLimited(lrpGuids, 16, (guid) =>
      bbs.desireLRP(desiredDefinition(guid, size.instances, { memory_mb: memoryMb })),
    );
    const desiredMs = Date.now() - t0;
    let lastReport = Date.now();
    await waitUntil(
      `${total} instances RUNNING`,
      async () => {
        peakRss = Math.max(peakRss, processUsage(pid).rssBytes);
        const counts = await bbsRecordCounts(server.url);
        const n = counts.get('actual_lrp:RUNNING') ?? 0;
        if (Date.now() - lastReport > 10_000) {
          lastReport = Date.now();
          const states = [...counts].filter(([k, v]) => k.startsWith('actual_lrp') && v > 0);
          // Cells whose presence lapsed under load explain a count that falls back.
          const present = (await bbs.listCells()).length;
          process.stdout.write(
            `  ${fmt(Date.now() - t0)}: ${states.map(([k, v]) => `${k.slice(11)} ${v}`).join(', ')}; ${present} cells present\n`,
          );
        }
        return n >= total;
      },
      size.timeoutMs,
      pollMs,
    );
    const burstMs = Date.now() - t0;
    const afterBurst = processUsage(pid);
    const cellsBurstCpuSeconds = cellsCpu() - cellsBefore;
    const machineBurstCpuSeconds = machineBusySeconds() - machineBefore;
    const requestsAfter = await httpRequestCounts(server.url);
    const spread = await instancesPerCell(
      bbs,
      cluster.hosts.flatMap((h) => h.cellIds),
    );

    // Steady state: nothing changes; the server's CPU over the window, once every cell has
    // passed since the burst.
    const settle = envInt('SCALE_SETTLE_MS', settleMs());
    process.stdout.write(`  idle window starts ${fmt(settle)} after the burst (every cell passed since)\n`);
    await sleep(settle);
    const idleRequestsFrom = await httpRequestCounts(server.url);
    const idleFrom = processUsage(pid);
    const cellsIdleFrom = cellsCpu();
    await sleep(size.idleSeconds * 1000);
    const idleTo = processUsage(pid);
    const cellsIdleCpuSeconds = cellsCpu() - cellsIdleFrom;
    const idleRequestsTo = await httpRequestCounts(server.url);

    // Cells killed with -9: whole processes of them, until none of theirs is left and all RUN.
    const victims = cluster.hosts.slice(0, killedProcesses);
    const deadCells = victims.flatMap((h) => h.cellIds);
    const lost = deadCells.reduce((sum, id) => sum + (spread.get(id) ?? 0), 0);
    const tKill = Date.now();
    await Promise.all(victims.map((h) => h.kill()));
    // Where the time goes: until the last killed cell's presence lapsed (bounded by the TTL and
    // where in its heartbeat interval the kill fell), until the converger had taken every
    // instance off the killed cells, and until all were RUNNING again.
    let expiredMs: number | undefined;
    let unclaimedMs: number | undefined;
    const dead = new Set(deadCells);
    await waitUntil(
      `the ${lost} instances of ${deadCells.length} killed cells RUNNING elsewhere`,
      async () => {
        if (expiredMs === undefined) {
          // The converger cannot act on a cell before its presence lapses.
          if ((await bbs.listCells()).some((c) => dead.has(c.cell_id))) return false;
          expiredMs = Date.now() - tKill;
        }
        if (unclaimedMs === undefined) {
          if (![...(await instancesPerCell(bbs, deadCells)).values()].every((n) => n === 0)) return false;
          unclaimedMs = Date.now() - tKill;
        }
        return (await running(server.url)) >= total;
      },
      size.timeoutMs,
      pollMs,
    );
    const replaceMs = Date.now() - tKill;
    const counts = [...spread.values()];
    return {
      backend: backend.name,
      total,
      cells: size.cells,
      desiredMs,
      burstMs,
      burstCpuSeconds: afterBurst.cpuSeconds - before.cpuSeconds,
      cellsBurstCpuSeconds,
      machineBurstCpuSeconds,
      peakRssBytes: peakRss,
      spreadMax: Math.max(...counts),
      spreadMin: Math.min(...counts),
      idleCpuPercent: (100 * (idleTo.cpuSeconds - idleFrom.cpuSeconds)) / size.idleSeconds,
      cellsIdleCpuPercent: (100 * cellsIdleCpuSeconds) / size.idleSeconds,
      killedCells: deadCells.length,
      lostInstances: lost,
      replaceMs,
      replaceExpiredMs: expiredMs ?? replaceMs,
      replaceUnclaimedMs: unclaimedMs ?? replaceMs,
      presenceTtlMs: grantedTtlMs(),
      burstRequests: [...requestsAfter]
        .map(([route, n]): [string, number] => [route, n - (requestsBefore.get(route) ?? 0)])
        .filter(([, n]) => n > 0),
      idleRequestsPerSecond: [...idleRequestsTo]
        .map(([route, n]): [string, number] => [
          route,
          (n - (idleRequestsFrom.get(route) ?? 0)) / size.idleSeconds,
        ])
        .filter(([, n]) => n > 0),
    };
  } finally {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const figures: ScaleFigures[] = [];
process.stdout.write(
  `cluster-scale: ${size.lrps} LRPs x ${size.instances} = ${total} instances over ${size.cells} simulated cells ` +
    `(${size.cellsPerProcess} per process, rep poll ${size.pollIntervalMs} ms, presence TTL ${size.presenceTtlMs} ms, ` +
    `start delay ${size.startDelayMs} ms, history ${size.history ? 'on' : 'off'})\n`,
);
for (const backend of await benchBackends()) {
  try {
    figures.push(await runBackend(backend));
  } catch (err) {
    // One backend that does not finish (a stall the harness found) still lets the other run.
    process.stdout.write(
      `${backend.name}: did not finish: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exitCode = 1;
  } finally {
    await backend.cleanup();
  }
}
printScaleFigures(figures);
