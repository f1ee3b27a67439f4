import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ExecutorCapacity } from '../executor/index.js';
import { type ServerProcess, startServerProcess } from './server-process.js';
import {
  type SimulatedCellsConfig,
  type SimulatedCellsProcess,
  spawnSimulatedCells,
} from './simulated-cells.js';
import type { SimulatedBehaviour } from './simulated-executor.js';

export interface SimulatedClusterOptions {
  /** A dir for the server's data and the cells' journals. */
  readonly dir: string;
  /** SQLite file path or postgres:// URL; the server's default SQLite file when absent. */
  readonly db?: string;
  readonly cells: number;
  /** Cells per child process (the last process may hold fewer). */
  readonly cellsPerProcess: number;
  readonly zones?: readonly string[];
  readonly capacity: ExecutorCapacity;
  readonly behaviour?: Partial<SimulatedBehaviour>;
  readonly pollIntervalMs?: number;
  readonly presenceTtlMs?: number;
  readonly history?: boolean;
  /** More `berth server` flags (intervals); later flags win. */
  readonly serverArgs?: readonly string[];
  /** Flags for node running the server (`--cpu-prof`). */
  readonly serverNodeArgs?: readonly string[];
  /** A file for the server's whole log. */
  readonly serverLogFile?: string;
}

/** A real `berth server` process and processes of simulated cells talking to it over HTTP. */
export interface SimulatedCluster {
  readonly server: ServerProcess;
  readonly hosts: SimulatedCellsProcess[];
  /** Stops every process (cells by kill -9, the server by SIGTERM so a --cpu-prof is written). */
  stop(): Promise<void>;
}

export async function startSimulatedCluster(options: SimulatedClusterOptions): Promise<SimulatedCluster> {
  const serverDir = join(options.dir, 'server');
  mkdirSync(serverDir, { recursive: true });
  const server = await startServerProcess(
    [
      'server',
      '--dir',
      serverDir,
      ...(options.db ? ['--db', options.db] : []),
      '--listen',
      '127.0.0.1:0',
      '--auth',
      'none',
      ...(options.serverArgs ?? []),
    ],
    {
      ...(options.serverNodeArgs ? { nodeArgs: options.serverNodeArgs } : {}),
      ...(options.serverLogFile ? { logFile: options.serverLogFile } : {}),
    },
  );
  const hosts: SimulatedCellsProcess[] = [];
  try {
    const configs: SimulatedCellsConfig[] = [];
    for (let first = 0; first < options.cells; first += options.cellsPerProcess) {
      const ids: string[] = [];
      for (let i = first; i < Math.min(options.cells, first + options.cellsPerProcess); i++)
        ids.push(`sim-${String(i).padStart(4, '0')}`);
      configs.push({
        serverUrl: server.url,
        cellIds: ids,
        // Rotated so zones go round robin over the whole cluster, not restart in each process:
        // uneven zones made the auction refuse instances ("no room in zone z3") in a 10-cell run.
        zones: rotate(options.zones ?? ['z1', 'z2', 'z3'], first),
        dataDir: join(options.dir, 'cells'),
        capacity: options.capacity,
        ...(options.behaviour ? { behaviour: options.behaviour } : {}),
        ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
        ...(options.presenceTtlMs !== undefined ? { presenceTtlMs: options.presenceTtlMs } : {}),
        ...(options.history !== undefined ? { history: options.history } : {}),
      });
    }
    // A few at a time: hundreds of reps registering at once is itself a burst for the server.
    for (let i = 0; i < configs.length; i += 4)
      hosts.push(...(await Promise.all(configs.slice(i, i + 4).map((c) => spawnSimulatedCells(c)))));
  } catch (err) {
    for (const host of hosts) host.child.kill('SIGKILL');
    server.child.kill('SIGKILL');
    throw err;
  }
  return {
    server,
    hosts,
    async stop() {
      // Profiled (BERTH_SIM_CPU_PROF), the processes end by exiting, so that they write their profiles.
      const end = async (host: SimulatedCellsProcess): Promise<void> => {
        if (!process.env.BERTH_SIM_CPU_PROF) return host.kill();
        host.child.kill('SIGUSR2');
        await host.exited;
      };
      await Promise.all(hosts.map(end));
      server.child.kill('SIGTERM');
      await server.exited;
    },
  };
}

function rotate<T>(items: readonly T[], by: number): T[] {
  const k = by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

/** The server's BBS record counts as its /metrics gauge `berth_bbs_records` reports them. */
export async function bbsRecordCounts(serverUrl: string): Promise<Map<string, number>> {
  const res = await fetch(`${serverUrl}/metrics`);
  if (!res.ok) throw new Error(`GET /metrics answered ${res.status}`);
  const counts = new Map<string, number>();
  for (const match of (await res.text()).matchAll(
    /^berth_bbs_records\{kind="([a-z_]+)",state="([A-Z_]*)"\} (\d+)$/gm,
  ))
    counts.set(match[2] ? `${match[1]}:${match[2]}` : (match[1] ?? ''), Number(match[3]));
  return counts;
}

/**
 * The server's HTTP requests so far by `METHOD route` (its /metrics counter
 * `berth_http_requests_total`, summed over status codes).
 */
export async function httpRequestCounts(serverUrl: string): Promise<Map<string, number>> {
  const res = await fetch(`${serverUrl}/metrics`);
  if (!res.ok) throw new Error(`GET /metrics answered ${res.status}`);
  const counts = new Map<string, number>();
  for (const match of (await res.text()).matchAll(
    /^berth_http_requests_total\{method="([A-Z]+)",route="([^"]*)",status="\d+"\} (\d+)$/gm,
  )) {
    const key = `${match[1]} ${match[2]}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(match[3]));
  }
  return counts;
}

/** Polls `done` every `everyMs` until it holds or `timeoutMs` passes (then throws naming `what`). */
export async function waitUntil(
  what: string,
  done: () => Promise<boolean>,
  timeoutMs: number,
  everyMs = 250,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
