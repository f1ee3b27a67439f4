import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BbsStore } from '../bbs/index.js';
import { errnoCode, listenBacklog, settledWithin, writeFileAtomic } from '../core/index.js';
import { Executor, type ExecutorCapacity } from '../executor/index.js';
import type { IngestRecord } from '../history/index.js';
import { type ImageResolver, PodRuntime } from '../runtime/index.js';
import { CellHistory } from './cell-history.js';
import type { CrashPolicy } from './crash-policy.js';
import { type RelationSource, RelationSync } from './relation-sync.js';
import { Rep } from './rep.js';
import type { TaskOutputUploader } from './rep-context.js';
import { buildRepApp } from './rep-server.js';

/** A loop that lives as long as the cell: the model's unit and machine agents (src/model/cell-agent.ts). */
export interface CellCompanion {
  start(): void;
  stop(): Promise<void>;
}

export interface CellOptions {
  readonly bbs: BbsStore;
  readonly cellId: string;
  readonly zone: string;
  readonly dataDir: string;
  readonly capacity: ExecutorCapacity;
  readonly images: ImageResolver;
  /** Where the rep API listens ("HOST:PORT", port 0 = any free port). */
  readonly listen: string;
  /** The address instances are reachable on from other machines (net info of ActualLRPs). */
  readonly address: string;
  readonly placementTags?: readonly string[];
  readonly optionalPlacementTags?: readonly string[];
  /** The server's relation data for this cell's units; with it, LRP containers get relations files. */
  readonly relations?: RelationSource;
  /**
   * Seed 003's unit and machine agents for this cell's units, run beside the rep; with it the
   * cell's presence carries `model_agent` and the server leaves these units to the cell.
   */
  readonly modelAgent?: CellCompanion;
  readonly pollIntervalMs?: number;
  readonly presenceTtlMs?: number;
  readonly evacuationTimeoutMs?: number;
  readonly crashPolicy?: CrashPolicy;
  readonly portRange?: { readonly from: number; readonly to: number };
  /** Bytes at which each container's log rotates; the runtime's default (10 MiB) otherwise. */
  readonly logSizeMax?: number;
  /** Containers prepared and started at once (`ExecutorOptions.maxConcurrentStarts`). */
  readonly maxConcurrentStarts?: number;
  readonly log?: (message: string) => void;
  /** Where task outputs are uploaded (the server's TaskOutputClient); without it tasks declaring outputs fail. */
  readonly taskOutputs?: TaskOutputUploader;
  /** Where journaled history goes (the server's ingest); without it the journal only fills. */
  readonly postHistory?: (batch: readonly IngestRecord[]) => Promise<void>;
}

export interface RunningCell {
  readonly rep: Rep;
  readonly executor: Executor;
  readonly url: string;
  /** The token the rep's API demands (`<dataDir>/rep.token`). */
  readonly token: string;
  /** Evacuates (seed: refuse work, hand instances over, then leave), then stops. */
  drain(): Promise<void>;
  /** Stops without evacuating: instances keep running; the next cell process adopts them. */
  close(): Promise<void>;
}

/** A cell: executor over the local runtime, the rep, and the rep's HTTP API. */
export async function startCell(options: CellOptions): Promise<RunningCell> {
  // A cell starts pods all its life: their holders are reused (holder-pool.ts).
  const runtime = new PodRuntime(options.dataDir, options.images, { holderPool: true });
  runtime.store.ensureDirs();
  const executor = new Executor({
    runtime,
    capacity: options.capacity,
    hostAddress: options.address,
    ...(options.portRange ? { portRange: options.portRange } : {}),
    ...(options.logSizeMax !== undefined ? { logSizeMax: options.logSizeMax } : {}),
    ...(options.maxConcurrentStarts !== undefined
      ? { maxConcurrentStarts: options.maxConcurrentStarts }
      : {}),
    ...(options.pollIntervalMs !== undefined
      ? { pollIntervalMs: Math.max(100, options.pollIntervalMs / 2) }
      : {}),
  });
  const history = new CellHistory(options.dataDir, options.cellId, executor, options.log ?? (() => {}));
  if (options.postHistory) history.start(options.postHistory);
  executor.start();
  const [host = '127.0.0.1', portText = '0'] = options.listen.split(/:(?=\d+$)/);
  // The rep must exist before the app, and the app's address before the rep registers presence.
  let url = '';
  const relations = options.relations
    ? new RelationSync({
        executor,
        source: options.relations,
        ...(options.pollIntervalMs !== undefined
          ? { intervalMs: Math.min(options.pollIntervalMs, 2_000) }
          : {}),
        ...(options.log ? { log: options.log } : {}),
      })
    : undefined;
  const token = repToken(options.dataDir);
  const rep = new Rep({
    repToken: token,
    ...(relations ? { relations } : {}),
    ...(options.modelAgent ? { modelAgent: true } : {}),
    bbs: options.bbs,
    executor,
    cellId: options.cellId,
    zone: options.zone,
    get repUrl() {
      return url;
    },
    ...(options.placementTags ? { placementTags: options.placementTags } : {}),
    ...(options.optionalPlacementTags ? { optionalPlacementTags: options.optionalPlacementTags } : {}),
    ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
    ...(options.presenceTtlMs !== undefined ? { presenceTtlMs: options.presenceTtlMs } : {}),
    ...(options.evacuationTimeoutMs !== undefined
      ? { evacuationTimeoutMs: options.evacuationTimeoutMs }
      : {}),
    ...(options.crashPolicy ? { crashPolicy: options.crashPolicy } : {}),
    ...(options.taskOutputs ? { taskOutputs: options.taskOutputs } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  const app = buildRepApp(rep, { token }, { executor });
  await app.listen({ host, port: Number(portText), backlog: listenBacklog });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : Number(portText);
  url = `http://${host}:${port}`;
  // The executor's warm-up (its pod worker loaded, the host's pod network set up) comes before the
  // rep announces the cell, as a kubelet's node turns Ready once its runtime is: the first work the
  // auctioneer hands the cell then starts as fast as the next. A warm-up that hangs (iptables
  // waiting on another's lock) delays the cell by 10 s at most.
  await settledWithin(executor.warmedUp(), 10_000);
  await rep.start();
  relations?.start();
  options.modelAgent?.start();
  const close = async () => {
    relations?.stop();
    await options.modelAgent?.stop();
    rep.stop();
    executor.stop();
    runtime.closeHolders();
    await history.stop();
    await app.close();
  };
  return {
    rep,
    executor,
    url,
    token,
    async drain() {
      await rep.evacuate();
      await close();
    },
    close,
  };
}

/** Where a cell keeps its rep's token: beside its pods, readable by root only. */
export function repTokenPath(dataDir: string): string {
  return join(dataDir, 'rep.token');
}

/**
 * The rep's token, made on the cell's first start (32 random bytes, base64url) and kept across
 * restarts: a restarted cell answers the server that still holds the token of its last heartbeat,
 * and an operator on the cell's machine can call its rep (`curl -H "Authorization: Bearer $(cat
 * rep.token)"`). Delete the file and restart the cell to change it.
 */
function repToken(dataDir: string): string {
  const path = repTokenPath(dataDir);
  try {
    const kept = readFileSync(path, 'utf8').trim();
    if (/^[A-Za-z0-9_-]{32,256}$/.test(kept)) return kept;
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
  const token = randomBytes(32).toString('base64url');
  writeFileAtomic(path, `${token}\n`, { durable: true, mode: 0o600 });
  return token;
}
