import { randomUUID } from 'node:crypto';
import {
  Agent,
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Endpoint, RoutePool } from './route-table.js';
import { noRoute, type RouterMetrics } from './router-metrics.js';

/** How an instance is picked from a route's pool. */
export type Balance = 'round-robin' | 'least-connections';

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

// Hop-by-hop headers (RFC 9110 7.6.1) are the client's connection's, never forwarded.
const hopByHop = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
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
    handleUpgrade(req, socket as Socket, head, options, picker),
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

function handleUpgrade(
  req: IncomingMessage,
  socket: Socket,
  head: Buffer,
  options: ProxyOptions,
  picker: Picker,
): void {
  const host = hostOf(req.headers.host);
  const url = req.url ?? '/';
  const pool = options.lookup(host, pathOf(url));
  const refuse = (status: number, text: string) => {
    socket.end(
      `HTTP/1.1 ${status} ${status === 404 ? 'Not Found' : status === 503 ? 'Service Unavailable' : 'Bad Gateway'}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
    );
  };
  socket.on('error', () => socket.destroy());
  if (!pool) {
    refuse(404, `berth router: no route for host "${host}"\n`);
    return;
  }
  const endpoint = picker.pick(pool, new Set());
  if (!endpoint) {
    refuse(503, `berth router: no running instance of route "${pool.route}"\n`);
    return;
  }
  picker.started(endpoint);
  const finish = once(() => picker.finished(endpoint));
  const backend = connect(endpoint.port, endpoint.address);
  backend.setNoDelay(true);
  socket.setNoDelay(true);
  backend.once('connect', () => {
    const headers = forwardedHeaders(req, req.headers.host);
    // The upgrade itself is what this connection is for: its Connection and Upgrade go along.
    headers.push('connection', 'Upgrade', 'upgrade', req.headers.upgrade ?? '');
    let text = `${req.method} ${url} HTTP/1.1\r\n`;
    for (let i = 0; i < headers.length; i += 2) text += `${headers[i]}: ${headers[i + 1]}\r\n`;
    backend.write(`${text}\r\n`);
    if (head.length > 0) backend.write(head);
    backend.pipe(socket);
    socket.pipe(backend);
  });
  backend.on('error', (err: NodeJS.ErrnoException) => {
    if (backend.bytesRead === 0 && !socket.destroyed)
      refuse(
        502,
        `berth router: instance ${endpoint.index} of route "${pool.route}" failed: ${err.code ?? err.message}\n`,
      );
    else socket.destroy();
  });
  backend.on('close', () => {
    finish();
    socket.destroy();
  });
  socket.on('close', () => backend.destroy());
}

/**
 * Round robin over the pool (a counter per route), or the instance with the fewest requests in
 * flight (ties by round robin); `tried` instances are skipped on a retry.
 */
class Picker {
  readonly #balance: Balance;
  readonly #next = new WeakMap<RoutePool, number>();
  readonly #inFlight = new Map<string, number>();

  constructor(balance: Balance) {
    this.#balance = balance;
  }

  pick(pool: RoutePool, tried: ReadonlySet<string>): Endpoint | undefined {
    const all = pool.endpoints;
    if (all.length === 0) return undefined;
    const start = this.#next.get(pool) ?? 0;
    this.#next.set(pool, (start + 1) % all.length);
    let best: Endpoint | undefined;
    let bestLoad = Number.POSITIVE_INFINITY;
    for (let i = 0; i < all.length; i++) {
      const candidate = all[(start + i) % all.length] as Endpoint;
      if (tried.has(candidate.id)) continue;
      if (this.#balance === 'round-robin') return candidate;
      const load = this.#inFlight.get(candidate.id) ?? 0;
      if (load < bestLoad) {
        best = candidate;
        bestLoad = load;
      }
    }
    return best;
  }

  started(endpoint: Endpoint): void {
    if (this.#balance === 'least-connections')
      this.#inFlight.set(endpoint.id, (this.#inFlight.get(endpoint.id) ?? 0) + 1);
  }

  finished(endpoint: Endpoint): void {
    if (this.#balance !== 'least-connections') return;
    const left = (this.#inFlight.get(endpoint.id) ?? 1) - 1;
    if (left > 0) this.#inFlight.set(endpoint.id, left);
    else this.#inFlight.delete(endpoint.id);
  }
}

/**
 * The end-to-end headers of `raw` (a message's rawHeaders: name, value, name, value, …) as the
 * same flat list, which node's http writes as it is: no headers object is built or validated per
 * request (the proxy's largest per-request cost besides the socket writes, docs/routing.md).
 * `forwarded` collects the X-Forwarded-* and X-Request-Id values instead of passing them on.
 */
function endToEndRaw(raw: readonly string[], forwarded?: Map<string, string>): string[] {
  const out: string[] = [];
  let named: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 10 && name.toLowerCase() === 'connection')
      named = (raw[i + 1] as string).split(',').map((h) => h.trim().toLowerCase());
  }
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    const lower = name.toLowerCase();
    if (hopByHop.has(lower) || named?.includes(lower)) continue;
    if (forwarded && forwardedNames.has(lower)) {
      // A repeated X-Forwarded-For is one list (RFC 7239's predecessor); the others: the first.
      const prior = forwarded.get(lower);
      if (prior === undefined) forwarded.set(lower, value);
      else if (lower === 'x-forwarded-for') forwarded.set(lower, `${prior}, ${value}`);
      continue;
    }
    out.push(name, value);
  }
  return out;
}

/**
 * The Host header and whether a body follows, read from the raw headers: `req.headers` is built
 * on first use, and the proxy never needs it.
 */
function requestFacts(raw: readonly string[]): { host: string | undefined; hasBody: boolean } {
  let host: string | undefined;
  let hasBody = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && host === undefined && name.toLowerCase() === 'host') host = raw[i + 1];
    else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') hasBody = true;
    else if (name.length === 14 && name.toLowerCase() === 'content-length' && Number(raw[i + 1]) > 0)
      hasBody = true;
  }
  return { host, hasBody };
}

const forwardedNames = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-request-id']);

/** The request's end-to-end headers with X-Forwarded-For/Proto/Host and X-Request-Id added. */
function forwardedHeaders(req: IncomingMessage, host: string | undefined): string[] {
  const seen = new Map<string, string>();
  const out = endToEndRaw(req.rawHeaders, seen);
  const client = req.socket.remoteAddress ?? '';
  const prior = seen.get('x-forwarded-for');
  out.push(
    'x-forwarded-for',
    prior ? `${prior}, ${client}` : client,
    'x-forwarded-proto',
    seen.get('x-forwarded-proto') ?? 'http',
    'x-forwarded-host',
    seen.get('x-forwarded-host') ?? host ?? '',
    'x-request-id',
    seen.get('x-request-id') ?? randomUUID(),
  );
  return out;
}

/** The Host header's name: lower case, without its port. */
export function hostOf(header: string | undefined): string {
  if (!header) return '';
  const host = header.startsWith('[') ? header.slice(0, header.indexOf(']') + 1) : header.split(':')[0];
  return (host ?? '').toLowerCase().replace(/\.$/, '');
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
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
