import { Pool } from 'undici';
import type { Endpoint } from './route-table.js';

/**
 * The router's keep-alive connections to its instances: one undici `Pool` per `address:port`,
 * made on the first request to it. undici's client is the proxy's HTTP side towards instances
 * because node's `http.request` cost most of the proxy's CPU (its Agent, ClientRequest and
 * streams around each of two socket writes; docs/routing.md).
 */
export class BackendPools {
  readonly #pools = new Map<string, Pool>();
  readonly #options: Pool.Options;

  constructor(connectTimeoutMs: number) {
    this.#options = {
      // A connect that takes longer fails, and an idempotent request retries elsewhere.
      connect: { timeout: connectTimeoutMs },
      // No timeout on an answer's head or between its body's chunks, as with node's client: a
      // long poll or an event stream may be quiet for minutes, and the client decides when to leave.
      headersTimeout: 0,
      bodyTimeout: 0,
    };
  }

  /** The pool of `endpoint`'s `address:port` (its key in `RouteTable.liveTargets`). */
  of(endpoint: Endpoint): Pool {
    const key = `${endpoint.address}:${endpoint.port}`;
    let pool = this.#pools.get(key);
    if (!pool) {
      const host = endpoint.address.includes(':') ? `[${endpoint.address}]` : endpoint.address;
      pool = new Pool(`http://${host}:${endpoint.port}`, this.#options);
      this.#pools.set(key, pool);
    }
    return pool;
  }

  /**
   * Destroys the pools of targets not in `live`: a killed container's socket never answers (no RST
   * comes from a namespace that is gone), so a request in flight on it fails now, and retries on
   * another instance if it may, instead of waiting out TCP.
   */
  sweep(live: ReadonlySet<string>): void {
    for (const [key, pool] of this.#pools) {
      if (live.has(key)) continue;
      this.#pools.delete(key);
      void pool.destroy(new Error('the instance left the route table'));
    }
  }

  close(): void {
    for (const pool of this.#pools.values()) void pool.destroy();
    this.#pools.clear();
  }
}
