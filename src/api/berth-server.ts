import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import {
  type CellPacingLimits,
  openBbsStore,
  type SqlBbsStore,
  type TaskCallbackConfig,
  taskCallbackSingleton,
} from '../bbs/index.js';
import { InvalidArgumentError, listenBacklog, runLoop, type ServiceLogger } from '../core/index.js';
import { type HistoryStore, recordUserAction } from '../history/index.js';
import { defaultOwner, SystemDeployer, type SystemDeployerOptions } from '../model/index.js';
import type { RegistryRoutesOptions } from '../registry/index.js';
import { ApiMetrics } from './api-metrics.js';
import { RegistryTokens } from './auth/registry-token-auth.js';
import { openTokenAuth } from './auth/token-store.js';
import { buildApp } from './build-app.js';
import { openHistory } from './history-server-parts.js';
import { serverRoutes } from './server-routes.js';
import { type Singleton, SingletonLease } from './singleton-lease.js';

export interface BbsServerOptions {
  /** SQLite path (":memory:" for tests) or a postgres:// URL. */
  readonly db: string;
  /** "HOST:PORT"; port 0 picks a free one (see `url` of the result). */
  readonly listen: string;
  /** A pino logger, or false for silence (tests). Default: JSON lines on stderr at "info". */
  readonly logger?: Logger | false;
  /**
   * Singletons this server competes for; the BBS's own janitor is always one of them. A function
   * gets the server's own store: a second SQLite handle in one process would block the first,
   * and the server's logger (undefined when silent) for the singletons' own lines.
   */
  readonly singletons?:
    | readonly Singleton[]
    | ((store: SqlBbsStore, logger: ServiceLogger | undefined) => readonly Singleton[]);
  readonly leaseTtlMs?: number;
  /** Events older than this are pruned by the janitor (default 24h). */
  readonly eventRetentionMs?: number;
  readonly eventPollMs?: number;
  readonly poolSize?: number;
  readonly plugins?: ReadonlyArray<(app: FastifyInstance) => Promise<void>>;
  /** Completion-callback delivery (the `task-callbacks` singleton): attempts, back-off, timeout. */
  readonly taskCallbacks?: Partial<TaskCallbackConfig>;
  /** 'tokens' (default): every call but /healthz and /metrics needs a bearer token (docs/auth.md). */
  readonly auth?: 'tokens' | 'none';
  /** Where the first admin token is written (`admin.token`, mode 0600) when auth is on. */
  readonly dataDir?: string;
  /** Run systems (deploys, teardowns, status; src/model) in this server; options tune its worker. */
  readonly systems?: boolean | Omit<SystemDeployerOptions, 'store' | 'backend' | 'owner'>;
  /** How often the system agent reconciles units with their instances (default 2 s). */
  readonly systemAgentIntervalMs?: number;
  /**
   * Task completion callbacks and webhooks may target loopback, link-local and unspecified
   * addresses (`berth server --allow-private-callbacks`); off by default (SSRF, docs/auth.md).
   */
  readonly allowPrivateCallbacks?: boolean;
  /** Serve the OCI registry of this image store under `/v2/`. */
  readonly registry?: RegistryRoutesOptions;
  /**
   * Back-pressure: at this many start requests waiting to be placed, creating LRPs and tasks is
   * answered 429 with `Retry-After` (src/api/admission-control.ts). Absent: no bound.
   */
  readonly maxPendingStarts?: number;
  /** How many heartbeats and safety-net passes all cells together may send (src/bbs/cell-pacing.ts). */
  readonly cellPacing?: CellPacingLimits;
}

export interface BbsServer {
  readonly url: string;
  readonly store: SqlBbsStore;
  /** Container history (issue 6) on the same database. */
  readonly history: HistoryStore;
  readonly app: FastifyInstance;
  /** This process's identity in leases. */
  readonly holder: string;
  /** Names of the singletons this server holds right now. */
  heldSingletons(): string[];
  /** Stops singletons (releasing their leases), stops listening, closes the store. */
  close(): Promise<void>;
}

/**
 * The server's composition root: what `berth server` is made of, top to bottom — the stores (the
 * BBS, container history, API tokens, the system model), the routes (the one list of
 * src/api/server-routes.ts), and the services that run in one server of the cluster at a time
 * (singleton leases: the BBS janitor, webhook and task-callback delivery, the system agent, and the
 * auctioneer and converger the caller adds). Callable in-process by tests and by `berth up`.
 */
export async function startBbsServer(options: BbsServerOptions): Promise<BbsServer> {
  const { host, port } = parseListen(options.listen);
  const logger =
    options.logger === undefined ? pino({ name: 'berth-server' }, pino.destination(2)) : options.logger;
  const metrics = new ApiMetrics();
  // One identity for the server's leases and the deploys it owns: host:pid:nonce, which the
  // action runner can check for liveness (defaultOwnerDead) when it takes over a dead owner's work.
  const holder = defaultOwner();
  const allowPrivateCallbacks = options.allowPrivateCallbacks === true;

  // ---- Stores
  const store = await openBbsStore(options.db, {
    onCasConflict: metrics.casConflict,
    ...(options.cellPacing ? { cellPacing: options.cellPacing } : {}),
    ...(options.poolSize !== undefined ? { poolSize: options.poolSize } : {}),
  });
  const history = await openHistory(store, { allowPrivateCallbacks });
  let tokens: Awaited<ReturnType<typeof openTokenAuth>>;
  try {
    tokens = await openTokenAuth(store, {
      auth: options.auth ?? 'tokens',
      ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
    });
  } catch (err) {
    await store.close();
    throw err;
  }
  const systems = options.systems
    ? await SystemDeployer.open({
        store,
        backend: store.backend,
        owner: holder,
        onEvents: (listener) => store.onEvents(listener),
        ...(options.dataDir !== undefined ? { secretKeyDir: options.dataDir } : {}),
        // Per-entity commands record who did them on the containers they affect.
        recordUserAction: (action) => recordUserAction(history.history, action),
        ...(typeof options.systems === 'object' ? options.systems : {}),
        ...(logger
          ? { log: (message: string, fields?: Record<string, unknown>) => logger.info(fields ?? {}, message) }
          : {}),
      })
    : undefined;

  // ---- Routes
  const leases: SingletonLease[] = [];
  const ttlMs = options.leaseTtlMs ?? 15_000;
  const app = await buildApp({
    store,
    metrics,
    logger: logger || false,
    ...(options.eventPollMs !== undefined ? { eventPollMs: options.eventPollMs } : {}),
    onEvents: (listener) => store.onEvents(listener),
    headEventId: () => store.headEventId(),
    health: () => ({ holder, singletons: leases.filter((l) => l.held).map((l) => l.held?.name) }),
    auth: tokens.auth,
    ...(options.dataDir !== undefined ? { registryTokens: RegistryTokens.forDataDir(options.dataDir) } : {}),
    allowPrivateCallbacks,
    routes: serverRoutes,
    taskOutputs: store.taskOutputs,
    history: { history: history.history, webhooks: history.webhooks, tokens: tokens.tokens },
    ...(options.plugins ? { plugins: options.plugins } : {}),
    ...(systems ? { systems } : {}),
    ...(options.registry ? { registry: options.registry } : {}),
    ...(options.maxPendingStarts !== undefined
      ? {
          admission: {
            maxPendingStarts: options.maxPendingStarts,
            pendingStarts: (limit: number) => store.countPendingStarts(limit),
          },
        }
      : {}),
  });
  try {
    await app.listen({ host, port, backlog: listenBacklog });
  } catch (err) {
    await store.close();
    throw err;
  }
  const address = app.server.address();
  const actualPort = typeof address === 'object' && address ? address.port : port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}`;
  // Deploys whose server died are resumed here (at once when it ran on this host).
  await systems?.start();

  // ---- Services: each a singleton, run by whichever server holds its lease
  const singletons = [
    janitor(store, options.eventRetentionMs ?? 86_400_000, logger || undefined),
    history.singleton,
    taskCallbackSingleton(store, {
      config: { ...options.taskCallbacks, allowPrivateTargets: allowPrivateCallbacks },
      onError: (err) => {
        if (logger) logger.warn({ err }, 'task callback worker pass failed');
      },
    }),
    ...(systems ? [systemAgent(systems, options.systemAgentIntervalMs ?? 2_000, logger || undefined)] : []),
    ...(typeof options.singletons === 'function'
      ? options.singletons(store, logger || undefined)
      : (options.singletons ?? [])),
  ];
  for (const singleton of singletons) {
    const lease = new SingletonLease({
      store,
      singleton,
      holder,
      ttlMs,
      ...(logger ? { logger } : {}),
      onChange: (event, held) => {
        if (logger)
          logger.info({ singleton: singleton.name, token: held?.token, holder }, `singleton ${event}`);
      },
    });
    leases.push(lease);
    lease.start();
  }

  let closing: Promise<void> | undefined;
  return {
    url,
    store,
    history: history.history,
    app,
    holder,
    heldSingletons: () => leases.flatMap((l) => (l.held ? [l.held.name] : [])),
    close: () => {
      closing ??= (async () => {
        await Promise.all(leases.map((l) => l.stop()));
        await systems?.stop();
        await app.close();
        await store.close();
      })();
      return closing;
    },
  };
}

/** The BBS's own singleton: prunes old events so the log does not grow without bound. */
function janitor(store: SqlBbsStore, retentionMs: number, logger: ServiceLogger | undefined): Singleton {
  return {
    name: 'bbs-janitor',
    run: ({ signal }) =>
      runLoop({
        name: 'bbs-janitor',
        signal,
        intervalMs: 60_000,
        ...(logger ? { logger } : {}),
        round: async () => {
          await store.pruneEvents({ before: new Date(Date.now() - retentionMs).toISOString() });
        },
      }),
  };
}

/**
 * The model's unit and machine agents as one singleton: a periodic `reconcileAll` so units follow
 * their instances (placements after a deploy, scale-ups, sidecars for new principals).
 */
function systemAgent(
  systems: SystemDeployer,
  intervalMs: number,
  logger: ServiceLogger | undefined,
): Singleton {
  return {
    name: 'system-agent',
    run: ({ signal }) =>
      runLoop({
        name: 'system-agent',
        signal,
        intervalMs,
        ...(logger ? { logger } : {}),
        round: () => systems.reconcileAll(),
      }),
  };
}

export function parseListen(listen: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(listen);
  const port = Number(match?.[3]);
  if (!match || !Number.isInteger(port) || port > 65535) {
    throw new InvalidArgumentError(`Invalid --listen "${listen}": expected HOST:PORT, e.g. 127.0.0.1:8889`, {
      flag: 'listen',
    });
  }
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}
