import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BbsStore } from '../bbs/index.js';

/**
 * The `/metrics` of a berth server, in a registry of its own (not prom-client's global one) so
 * several servers in one test process do not collide.
 */
export class ApiMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'method' | 'route' | 'status'>;
  readonly latency: Histogram<'method' | 'route'>;
  readonly casConflicts: Counter<'operation'>;
  #store: BbsStore | undefined;

  constructor() {
    this.requests = new Counter({
      name: 'berth_http_requests_total',
      help: 'HTTP requests answered, by route template and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.latency = new Histogram({
      name: 'berth_http_request_duration_seconds',
      help: 'HTTP request latency, by route template',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [this.registry],
    });
    this.casConflicts = new Counter({
      name: 'berth_bbs_cas_conflicts_total',
      help: 'Compare-and-set operations that lost to a concurrent writer, by store operation',
      labelNames: ['operation'],
      registers: [this.registry],
    });
    const metrics = this;
    new Gauge({
      name: 'berth_bbs_records',
      help: 'Records in the BBS, by kind and state (read from the store at scrape time)',
      labelNames: ['kind', 'state'],
      registers: [this.registry],
      async collect() {
        const store = metrics.#store;
        if (!store) return;
        const counts = await store.countRecords();
        this.reset();
        this.set({ kind: 'desired_lrp', state: '' }, counts.desired_lrps);
        for (const [state, n] of Object.entries(counts.actual_lrps))
          this.set({ kind: 'actual_lrp', state }, n);
        this.set({ kind: 'actual_lrp', state: 'EVACUATING' }, counts.evacuating_actual_lrps);
        for (const [state, n] of Object.entries(counts.tasks)) this.set({ kind: 'task', state }, n);
        this.set({ kind: 'cell', state: '' }, counts.cells);
        this.set({ kind: 'start_request', state: '' }, counts.start_requests);
        this.set({ kind: 'stop_request', state: '' }, counts.stop_requests);
      },
    });
  }

  /** Pass as the store's `onCasConflict`. */
  readonly casConflict = (operation: string): void => {
    this.casConflicts.inc({ operation });
  };

  observeStore(store: BbsStore): void {
    this.#store = store;
  }
}
