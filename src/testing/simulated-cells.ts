import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BbsClient } from '../bbs/index.js';
import { listenBacklog } from '../core/index.js';
import type { ExecutorCapacity } from '../executor/index.js';
import { HistoryClient } from '../history/index.js';
import { buildRepApp, CellHistory, Rep } from '../rep/index.js';
import { type SimulatedBehaviour, SimulatedExecutor } from './simulated-executor.js';

/** What one process of simulated cells hosts; JSON, so a parent can hand it to the child. */
export interface SimulatedCellsConfig {
  readonly serverUrl: string;
  readonly token?: string;
  readonly cellIds: readonly string[];
  /** Zones handed out round robin over the cells. */
  readonly zones: readonly string[];
  /** Each cell's journal and staging dirs go below it, one dir per cell. */
  readonly dataDir: string;
  readonly capacity: ExecutorCapacity;
  readonly behaviour?: Partial<SimulatedBehaviour>;
  readonly pollIntervalMs?: number;
  readonly presenceTtlMs?: number;
  readonly evacuationTimeoutMs?: number;
  /** Journal container events and post them to the server's history ingest, as real cells do. */
  readonly history?: boolean;
}

export interface SimulatedCell {
  readonly id: string;
  readonly rep: Rep;
  readonly executor: SimulatedExecutor;
  readonly url: string;
}

export interface SimulatedCellHost {
  readonly cells: readonly SimulatedCell[];
  /** Evacuates every cell (the seed's drain), then closes. */
  drain(): Promise<void>;
  /** Stops without evacuating. */
  close(): Promise<void>;
}

/**
 * Many cells in this process: each the real rep (its loops, its HTTP API on its own port, its BBS
 * client) over a `SimulatedExecutor`, optionally with the real history journal. Everything a cell
 * says to the server goes over HTTP as from `berth cell`.
 */
export async function startSimulatedCells(
  config: SimulatedCellsConfig,
  log: (message: string) => void = () => {},
): Promise<SimulatedCellHost> {
  const auth = config.token ? { token: config.token } : {};
  const history = new HistoryClient(config.serverUrl, auth);
  const stops: (() => Promise<void>)[] = [];
  const cells = await Promise.all(
    config.cellIds.map(async (id, i): Promise<SimulatedCell> => {
      const dataDir = join(config.dataDir, id);
      mkdirSync(dataDir, { recursive: true });
      const executor = new SimulatedExecutor({
        capacity: config.capacity,
        hostAddress: '127.0.0.1',
        dataDir,
        ...(config.behaviour ? { behaviour: config.behaviour } : {}),
      });
      const cellLog = (message: string) => log(`${id}: ${message}`);
      // One client per cell, as each `berth cell` has its own (its requests in flight are bounded per client).
      const bbs = new BbsClient(config.serverUrl, auth);
      const journal = config.history ? new CellHistory(dataDir, id, executor, cellLog) : undefined;
      journal?.start(async (batch) => {
        await history.ingest(batch);
      });
      const token = randomBytes(32).toString('base64url');
      let url = '';
      const rep = new Rep({
        bbs,
        executor,
        cellId: id,
        zone: config.zones[i % config.zones.length] ?? 'z1',
        get repUrl() {
          return url;
        },
        repToken: token,
        ...(config.pollIntervalMs !== undefined ? { pollIntervalMs: config.pollIntervalMs } : {}),
        ...(config.presenceTtlMs !== undefined ? { presenceTtlMs: config.presenceTtlMs } : {}),
        ...(config.evacuationTimeoutMs !== undefined
          ? { evacuationTimeoutMs: config.evacuationTimeoutMs }
          : {}),
        log: cellLog,
      });
      const app = buildRepApp(rep, { token });
      await app.listen({ host: '127.0.0.1', port: 0, backlog: listenBacklog });
      const address = app.server.address();
      url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      await rep.start();
      stops.push(async () => {
        rep.stop();
        executor.stop();
        await journal?.stop();
        await app.close();
      });
      return { id, rep, executor, url };
    }),
  );
  const close = async () => {
    await Promise.all(stops.map((stop) => stop()));
  };
  return {
    cells,
    async drain() {
      await Promise.all(cells.map((cell) => cell.rep.evacuate()));
      await close();
    },
    close,
  };
}

/** A child process hosting simulated cells (`simulated-cells-main.ts`). */
export interface SimulatedCellsProcess {
  readonly child: ChildProcess;
  readonly cellIds: readonly string[];
  readonly exited: Promise<number | null>;
  /** kill -9: the cells vanish without a word, as a machine that loses power. */
  kill(): Promise<void>;
  /** SIGTERM: every cell evacuates, then the process exits. */
  drain(): Promise<number | null>;
  /** The last 4,000 characters the process wrote to stderr. */
  stderr(): string;
}

const mainPath = fileURLToPath(new URL('./simulated-cells-main.js', import.meta.url));

/** Starts a process of simulated cells; resolves once every cell has registered its presence. */
export async function spawnSimulatedCells(config: SimulatedCellsConfig): Promise<SimulatedCellsProcess> {
  // BERTH_SIM_CPU_PROF=DIR: each process writes a CPU profile there when it ends (not when killed).
  const profile = process.env.BERTH_SIM_CPU_PROF;
  const nodeArgs = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
  const child = spawn(process.execPath, [...nodeArgs, mainPath], { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin?.end(JSON.stringify(config));
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
    // BERTH_SIM_LOG=1: the cells' logs go on to this process's stderr, for a run being debugged.
    if (process.env.BERTH_SIM_LOG === '1') process.stderr.write(chunk);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`simulated cells exited ${code}: ${stderr}`)));
  });
  return {
    child,
    cellIds: config.cellIds,
    exited,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    async drain() {
      child.kill('SIGTERM');
      return exited;
    },
    stderr: () => stderr,
  };
}
