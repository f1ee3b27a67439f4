import { Counter, Histogram, Registry } from 'prom-client';

/** A request's route label when no route matched (404) or the router answered itself. */
export const noRoute = '(none)';

/**
 * The router's own Prometheus registry (`/metrics` on the router's listener): requests by route
 * and status class, and the latency of each route's answers (first byte of the answer's head,
 * the router's added time included).
 */
export class RouterMetrics {
  readonly registry = new Registry();
  readonly #requests = new Counter({
    name: 'berth_router_requests_total',
    help: 'Requests the router answered, by route and status class (2xx, 3xx, 4xx, 5xx)',
    labelNames: ['route', 'status_class'] as const,
    registers: [this.registry],
  });
  readonly #latency = new Histogram({
    name: 'berth_router_request_duration_seconds',
    help: 'Time from the request to the head of its answer, by route',
    labelNames: ['route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly #retries = new Counter({
    name: 'berth_router_retries_total',
    help: 'Idempotent requests sent to another instance after a failed connect, by route',
    labelNames: ['route'] as const,
    registers: [this.registry],
  });
  // prom-client looks labels up by hashing them on every call; a route's children are kept.
  readonly #children = new Map<
    string,
    { latency: { observe(v: number): void }; byClass: Map<number, { inc(): void }> }
  >();

  /** One answer of `route` with `status`, `seconds` after the request arrived. */
  observe(route: string, status: number, seconds: number): void {
    let child = this.#children.get(route);
    if (!child) {
      child = { latency: this.#latency.labels(route), byClass: new Map() };
      this.#children.set(route, child);
    }
    const statusClass = Math.floor(status / 100);
    let counter = child.byClass.get(statusClass);
    if (!counter) {
      counter = this.#requests.labels(route, `${statusClass}xx`);
      child.byClass.set(statusClass, counter);
    }
    counter.inc();
    child.latency.observe(seconds);
  }

  retried(route: string): void {
    this.#retries.labels(route).inc();
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
