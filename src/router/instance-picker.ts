import type { Endpoint, RoutePool } from './route-table.js';

/** How an instance is picked from a route's pool. */
export type Balance = 'round-robin' | 'least-connections';

/**
 * Round robin over the pool (a counter per route), or the instance with the fewest requests in
 * flight (ties by round robin); `tried` instances are skipped on a retry.
 */
export class Picker {
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
