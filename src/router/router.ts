import type { AddressInfo } from 'node:net';
import { InvalidArgumentError, listenBacklog, type ServiceLogger } from '../core/index.js';
import type { Balance } from './instance-picker.js';
import { createProxyServer } from './proxy.js';
import { followRoutes, type RouteSource } from './route-feed.js';
import { RouteTable } from './route-table.js';
import { RouterMetrics } from './router-metrics.js';

export interface RouterOptions {
  readonly source: RouteSource;
  /** HOST:PORT; port 0 picks a free one (the URL says which). */
  readonly listen: string;
  readonly balance?: Balance;
  readonly logger?: ServiceLogger;
  readonly cellPollMs?: number;
}

export interface RunningRouter {
  /** `http://HOST:PORT` the router listens on. */
  readonly url: string;
  readonly port: number;
  readonly table: RouteTable;
  readonly metrics: RouterMetrics;
  /** Resolves once the first snapshot is in the table. */
  readonly synced: Promise<void>;
  close(): Promise<void>;
}

/**
 * A router: the route table kept from the BBS (route-feed.ts) and the proxy in front of it
 * (proxy.ts), on one listener. `berth router` runs one on its own; `berth server` and `berth up`
 * run one beside the server.
 */
export async function startRouter(options: RouterOptions): Promise<RunningRouter> {
  const { host, port } = parseRouterListen(options.listen);
  const table = new RouteTable();
  const metrics = new RouterMetrics();
  const proxy = createProxyServer({
    lookup: (h, path) => table.lookup(h, path),
    routes: () => table.routes(),
    metrics,
    ...(options.balance ? { balance: options.balance } : {}),
  });
  const { server } = proxy;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, backlog: listenBacklog }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const actualPort = (server.address() as AddressInfo).port;
  const stop = new AbortController();
  let markSynced: () => void = () => {};
  const synced = new Promise<void>((resolve) => {
    markSynced = resolve;
  });
  const feed = followRoutes(options.source, table, {
    signal: stop.signal,
    onSynced: () => markSynced(),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.cellPollMs !== undefined ? { cellPollMs: options.cellPollMs } : {}),
  });
  // Connections to instances that left the table are closed within a sweep (proxy.ts: sweep).
  let sweptAt = -1;
  const sweeper = setInterval(() => {
    if (table.version === sweptAt) return;
    sweptAt = table.version;
    proxy.sweep(table.liveTargets());
  }, 200);
  sweeper.unref();
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}`,
    port: actualPort,
    table,
    metrics,
    synced,
    close: () => {
      closing ??= (async () => {
        stop.abort();
        clearInterval(sweeper);
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await feed;
      })();
      return closing;
    },
  };
}

/** `HOST:PORT` (`[::1]:PORT` for IPv6) of `--listen`/`--router-listen`. */
export function parseRouterListen(listen: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(listen);
  const port = Number(match?.[3]);
  if (!match || !Number.isInteger(port) || port > 65535)
    throw new InvalidArgumentError(
      `Invalid router address "${listen}": expected HOST:PORT, e.g. 127.0.0.1:8890`,
      {
        flag: 'listen',
      },
    );
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

export function parseBalance(text: string | undefined): Balance {
  if (text === undefined || text === 'round-robin') return 'round-robin';
  if (text === 'least-connections') return 'least-connections';
  throw new InvalidArgumentError(`Invalid --balance "${text}": expected round-robin or least-connections`, {
    flag: 'balance',
  });
}
