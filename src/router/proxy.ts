import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import { BackendPools } from './backend-pools.js';
import { type Balance, Picker } from './instance-picker.js';
import { forwardedHeaders, hostOf, pathOf, requestFacts, responseHeaders } from './proxy-headers.js';
import { handleUpgrade } from './proxy-upgrade.js';
import type { Endpoint, RoutePool } from './route-table.js';
import { noRoute, type RouterMetrics } from './router-metrics.js';

export interface ProxyOptions {
  readonly lookup: (host: string, path: string) => RoutePool | undefined;
  /** Every route, for `GET /routes` on a Host that is no route (gorouter's /routes). */
  readonly routes?: () => readonly RoutePool[];
  readonly metrics: RouterMetrics;
  readonly balance?: Balance;
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
  const picker = new Picker(options.balance ?? 'round-robin');
  const pools = new BackendPools(options.connectTimeoutMs ?? 5000);
  const server = createServer({ keepAlive: true }, (req, res) =>
    handleRequest(req, res, options, picker, pools),
  );
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    handleUpgrade(req, socket as Socket, head, options.lookup, picker),
  );
  server.on('close', () => pools.close());
  return { server, sweep: (live) => pools.sweep(live) };
}

function handleRequest(
  req: IncomingMessage,
  res: ServerResponse,
  options: ProxyOptions,
  picker: Picker,
  pools: BackendPools,
): void {
  const started = process.hrtime.bigint();
  const facts = requestFacts(req.rawHeaders);
  const url = req.url ?? '/';
  const host = hostOf(facts.host);
  const pool = options.lookup(host, pathOf(url));
  if (pool) {
    new Exchange(
      req,
      res,
      url,
      facts.host,
      facts.hasBody,
      pool,
      started,
      options.metrics,
      picker,
      pools,
    ).attempt();
    return;
  }
  if (url === '/metrics' || url === '/healthz' || url === '/routes') {
    void serveOwn(url, res, options);
    return;
  }
  res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(`berth router: no route for host "${host}"\n`);
  options.metrics.observe(noRoute, 404, secondsSince(started));
}

/**
 * One proxied request, and undici's dispatch handler for each of its attempts: the answer's head
 * and body chunks go to the client as they come, with the instance's backpressure passed on. One
 * object per request (its fields instead of a closure per event), and the same one again on a
 * retry: an attempt ends in exactly one of onComplete and onError before the next starts.
 */
class Exchange implements Dispatcher.DispatchHandlers {
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  readonly #url: string;
  readonly #hostHeader: string | undefined;
  readonly #hasBody: boolean;
  readonly #pool: RoutePool;
  readonly #started: bigint;
  readonly #metrics: RouterMetrics;
  readonly #picker: Picker;
  readonly #pools: BackendPools;
  #headers: string[] | undefined;
  #retriesLeft: number;
  // Made on a retry only: most requests are tried once.
  #tried: Set<string> | undefined;
  #endpoint: Endpoint | undefined;
  #inFlight = false;
  #answered = false;
  #clientGone = false;
  #abort: ((err?: Error) => void) | undefined;
  #resume: (() => void) | undefined;

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    url: string,
    hostHeader: string | undefined,
    hasBody: boolean,
    pool: RoutePool,
    started: bigint,
    metrics: RouterMetrics,
    picker: Picker,
    pools: BackendPools,
  ) {
    this.#req = req;
    this.#res = res;
    this.#url = url;
    this.#hostHeader = hostHeader;
    this.#hasBody = hasBody;
    this.#pool = pool;
    this.#started = started;
    this.#metrics = metrics;
    this.#picker = picker;
    this.#pools = pools;
    // A body may have been read by the time a connect fails: only bodiless idempotent requests retry.
    this.#retriesLeft = idempotent.has(req.method ?? '') && !hasBody ? 1 : 0;
    res.on('close', this.#onClientClose);
  }

  attempt(): void {
    const endpoint = this.#picker.pick(this.#pool, this.#tried ?? noneTried);
    if (!endpoint) {
      this.#answer(503, `berth router: no running instance of route "${this.#pool.route}"\n`);
      return;
    }
    this.#picker.started(endpoint);
    this.#endpoint = endpoint;
    this.#inFlight = true;
    this.#abort = undefined;
    this.#headers ??= forwardedHeaders(this.#req, this.#hostHeader);
    this.#pools.of(endpoint).dispatch(
      {
        path: this.#url,
        method: (this.#req.method ?? 'GET') as Dispatcher.HttpMethod,
        headers: this.#headers,
        body: this.#hasBody ? this.#req : null,
      },
      this,
    );
  }

  onConnect(abort: (err?: Error) => void): void {
    this.#abort = abort;
    if (this.#clientGone) abort(new Error('the client went away'));
  }

  onHeaders(statusCode: number, raw: Buffer[], resume: () => void, statusText: string): boolean {
    // 1xx interim answers stay between the router and the instance: node's server already sent
    // the client its own 100 Continue.
    if (statusCode < 200) return true;
    this.#answered = true;
    this.#resume = resume;
    this.#res.writeHead(statusCode, statusText || undefined, responseHeaders(raw));
    this.#metrics.observe(this.#pool.route, statusCode, secondsSince(this.#started));
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.#res.write(chunk)) return true;
    // The client reads slower than the instance writes: undici stops reading until it drained.
    if (this.#resume) this.#res.once('drain', this.#resume);
    return false;
  }

  onComplete(): void {
    this.#finish();
    this.#res.end();
  }

  onError(err: Error & { code?: string }): void {
    this.#finish();
    if (this.#clientGone) return;
    const res = this.#res;
    if (this.#answered || res.headersSent) {
      res.destroy();
      return;
    }
    const endpoint = this.#endpoint as Endpoint;
    this.#tried ??= new Set();
    this.#tried.add(endpoint.id);
    if (this.#retriesLeft > 0 && this.#pool.endpoints.length > this.#tried.size) {
      this.#retriesLeft -= 1;
      this.#metrics.retried(this.#pool.route);
      this.attempt();
      return;
    }
    this.#answer(
      502,
      `berth router: instance ${endpoint.index} of route "${this.#pool.route}" (${endpoint.address}:${endpoint.port}) failed: ${err.code ?? err.message}\n`,
    );
  }

  // The client went away first: the instance's side is stopped too (nothing left to read it).
  readonly #onClientClose = (): void => {
    if (this.#res.writableFinished) return;
    this.#clientGone = true;
    this.#abort?.(new Error('the client went away'));
    this.#finish();
  };

  #finish(): void {
    if (!this.#inFlight) return;
    this.#inFlight = false;
    this.#picker.finished(this.#endpoint as Endpoint);
  }

  #answer(status: 502 | 503, text: string): void {
    this.#res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
    this.#res.end(text);
    this.#metrics.observe(this.#pool.route, status, secondsSince(this.#started));
  }
}

function secondsSince(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e9;
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
