import {
  Agent,
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type Balance, Picker } from './instance-picker.js';
import { endToEndRaw, forwardedHeaders, hostOf, pathOf, requestFacts } from './proxy-headers.js';
import { handleUpgrade } from './proxy-upgrade.js';
import type { RoutePool } from './route-table.js';
import { noRoute, type RouterMetrics } from './router-metrics.js';

export interface ProxyOptions {
  readonly lookup: (host: string, path: string) => RoutePool | undefined;
  /** Every route, for `GET /routes` on a Host that is no route (gorouter's /routes). */
  readonly routes?: () => readonly RoutePool[];
  readonly metrics: RouterMetrics;
  readonly balance?: Balance;
  /** Idle keep-alive connections kept per backend (default 64). */
  readonly maxFreeSockets?: number;
  /** A connect to an instance that takes longer fails (and an idempotent request retries); default 5 s. */
  readonly connectTimeoutMs?: number;
}

/** The proxy's server, and the sweep of connections to instances that left the table. */
export interface ProxyServer {
  readonly server: Server;
  /**
   * Closes every connection to a backend `address:port` not in `live`: a killed container's
   * socket never answers (no RST comes from a namespace that is gone), so a request in flight on
   * it fails now, and retries on another instance if it may, instead of waiting out TCP.
   */
  sweep(live: ReadonlySet<string>): void;
}

const idempotent = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);
const noneTried: ReadonlySet<string> = new Set();

/**
 * The router's HTTP side (gorouter): the Host header (and the path) picks a route from the table,
 * the balance picks an instance, and the request streams to it over a keep-alive connection and its
 * answer streams back, bodies never buffered. An idempotent request without a body whose connect
 * fails goes to another instance once. No route: 404; a route without a running instance: 503
 * naming the route. `Upgrade` requests (WebSockets) are piped as raw sockets once the backend is
 * connected. `/metrics`, `/healthz` and `/routes` answer on a Host that is no route.
 */
export function createProxyServer(options: ProxyOptions): ProxyServer {
  const agent = new Agent({
    keepAlive: true,
    maxFreeSockets: options.maxFreeSockets ?? 64,
    scheduling: 'lifo',
  });
  const picker = new Picker(options.balance ?? 'round-robin');
  const sockets = new Map<string, Set<Socket>>();
  const track = (target: string, socket: Socket) => {
    let set = sockets.get(target);
    if (!set) {
      set = new Set();
      sockets.set(target, set);
    }
    if (set.has(socket)) return;
    set.add(socket);
    const tracked = set;
    socket.once('close', () => {
      tracked.delete(socket);
      if (tracked.size === 0 && sockets.get(target) === tracked) sockets.delete(target);
    });
  };
  const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
  const onSocket = (target: string, socket: Socket) => {
    // Small requests and answers go out at once (no Nagle wait on a proxied round trip).
    socket.setNoDelay(true);
    track(target, socket);
    if (!socket.connecting) return;
    const timer = setTimeout(
      () => socket.destroy(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' })),
      connectTimeoutMs,
    );
    socket.once('connect', () => clearTimeout(timer));
    socket.once('close', () => clearTimeout(timer));
  };
  const server = createServer({ keepAlive: true }, (req, res) => {
    void handleRequest(req, res, options, agent, picker, onSocket);
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    handleUpgrade(req, socket as Socket, head, options.lookup, picker),
  );
  server.on('close', () => agent.destroy());
  return {
    server,
    sweep(live) {
      for (const [target, set] of sockets) {
        if (live.has(target)) continue;
        for (const socket of set) socket.destroy();
        sockets.delete(target);
      }
    },
  };
}

async function handleRequest(
  req: IncomingMessage,
  res: ServerResponse,
  options: ProxyOptions,
  agent: Agent,
  picker: Picker,
  onSocket: (target: string, socket: Socket) => void,
): Promise<void> {
  const started = process.hrtime.bigint();
  const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
  const facts = requestFacts(req.rawHeaders);
  const hostHeader = facts.host;
  const host = hostOf(hostHeader);
  const url = req.url ?? '/';
  const pool = options.lookup(host, pathOf(url));
  if (!pool) {
    if (url === '/metrics' || url === '/healthz' || url === '/routes') return serveOwn(url, res, options);
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(`berth router: no route for host "${host}"\n`);
    options.metrics.observe(noRoute, 404, seconds());
    return;
  }
  const headers = forwardedHeaders(req, hostHeader);
  // A body may have been read by the time a connect fails: only bodiless idempotent requests retry.
  const hasBody = facts.hasBody;
  let retriesLeft = idempotent.has(req.method ?? '') && !hasBody ? 1 : 0;
  // Made on a retry only: most requests are tried once.
  let tried: Set<string> | undefined;
  let clientGone = false;
  let current: { readonly upstream: ClientRequest; readonly finish: () => void } | undefined;
  // One listener for every attempt. The client went away first: the backend's side is stopped
  // too (nothing left to read it).
  res.on('close', () => {
    if (!res.writableFinished) {
      clientGone = true;
      current?.upstream.destroy();
    }
    current?.finish();
  });
  const attempt = (): void => {
    const endpoint = picker.pick(pool, tried ?? noneTried);
    if (!endpoint) {
      res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`berth router: no running instance of route "${pool.route}"\n`);
      options.metrics.observe(pool.route, 503, seconds());
      return;
    }
    picker.started(endpoint);
    let answered = false;
    const upstream: ClientRequest = httpRequest({
      agent,
      host: endpoint.address,
      port: endpoint.port,
      method: req.method,
      path: url,
      headers,
    });
    const finish = once(() => picker.finished(endpoint));
    current = { upstream, finish };
    upstream.on('socket', (socket) => onSocket(`${endpoint.address}:${endpoint.port}`, socket as Socket));
    upstream.on('response', (answer) => {
      answered = true;
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEndRaw(answer.rawHeaders));
      options.metrics.observe(pool.route, answer.statusCode ?? 502, seconds());
      answer.pipe(res);
      answer.on('end', finish);
      answer.on('error', () => res.destroy());
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      finish();
      if (clientGone) return;
      if (answered || res.headersSent) {
        res.destroy();
        return;
      }
      tried ??= new Set();
      tried.add(endpoint.id);
      if (retriesLeft > 0 && pool.endpoints.length > tried.size) {
        retriesLeft -= 1;
        options.metrics.retried(pool.route);
        attempt();
        return;
      }
      res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(
        `berth router: instance ${endpoint.index} of route "${pool.route}" (${endpoint.address}:${endpoint.port}) failed: ${err.code ?? err.message}\n`,
      );
      options.metrics.observe(pool.route, 502, seconds());
    });
    if (hasBody) req.pipe(upstream);
    else upstream.end();
  };
  attempt();
}

async function serveOwn(url: string, res: ServerResponse, options: ProxyOptions): Promise<void> {
  const { metrics } = options;
  if (url === '/routes') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ routes: options.routes?.() ?? [] }));
    return;
  }
  if (url === '/healthz') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok\n');
    return;
  }
  res.writeHead(200, { 'content-type': metrics.registry.contentType });
  res.end(await metrics.text());
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
