import type { BbsStore, Lease } from '../bbs/index.js';
import {
  describeError,
  runLoop,
  type ServiceLogger,
  type SingletonContext,
  silentLogger,
} from '../core/index.js';

/** A job that must run in exactly one server of a cluster (converger, auctioneer, janitor). */
export interface Singleton {
  readonly name: string;
  /**
   * Runs while this server holds the lease; must return soon after `signal` aborts (the lease was
   * lost or the server is stopping). `token` is the lease's fencing token.
   */
  run(context: SingletonContext): Promise<void>;
}

export interface SingletonLeaseOptions {
  readonly store: BbsStore;
  readonly singleton: Singleton;
  /** This server's identity; unique per process. */
  readonly holder: string;
  readonly ttlMs: number;
  /** How often to renew (default ttl/3), so two renewals may fail before the lease runs out. */
  readonly renewMs?: number;
  /** `released`: this server let it go as it stopped; `lost`: it could not renew it in time. */
  readonly onChange?: (event: 'acquired' | 'lost' | 'released', lease: Lease | undefined) => void;
  readonly now?: () => number;
  /** Where a singleton's own failure (its `run` threw) is reported. */
  readonly logger?: ServiceLogger;
}

/**
 * Acquires and renews one named lease row in the store and runs the singleton while it holds it.
 * A holder that cannot renew stops its singleton before the TTL can run out (it assumes the lease
 * lost once `ttl` has passed since its last successful renewal started), so two servers never run
 * it at once as long as clocks agree to within the renewal period. kill -9 of the holder hands
 * the lease over within the TTL: the next renewal of another server finds it expired.
 */
export class SingletonLease {
  readonly #options: SingletonLeaseOptions;
  readonly #now: () => number;
  #held: Lease | undefined;
  #job: { controller: AbortController; done: Promise<void> } | undefined;
  /** Aborts the renewal loop. */
  readonly #renewals = new AbortController();
  #stopped = false;
  #lastRenewStart = 0;

  constructor(options: SingletonLeaseOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  get held(): Lease | undefined {
    return this.#held;
  }

  start(): void {
    const { singleton, ttlMs, renewMs } = this.#options;
    void runLoop({
      name: `lease ${singleton.name}`,
      signal: this.#renewals.signal,
      intervalMs: renewMs ?? Math.max(50, ttlMs / 3),
      round: () => this.#tick(),
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#renewals.abort();
    const wasHeld = this.#held !== undefined;
    await this.#lose('released');
    if (wasHeld) {
      // Hand over at once instead of making the others wait for the TTL.
      await this.#options.store
        .releaseLease({ name: this.#options.singleton.name, holder: this.#options.holder })
        // catch-all: a release that fails only makes the others wait for the TTL, as after a crash.
        .catch(() => {});
    }
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return;
    const { store, singleton, holder, ttlMs } = this.#options;
    const started = this.#now();
    try {
      const result = await store.acquireLease({ name: singleton.name, holder, ttl_ms: ttlMs });
      if (this.#stopped) return;
      if (result.acquired) {
        this.#lastRenewStart = started;
        const fresh = this.#held === undefined || this.#held.token !== result.lease.token;
        if (fresh) await this.#lose();
        this.#held = result.lease;
        if (fresh) this.#begin(result.lease);
      } else {
        await this.#lose();
      }
    } catch {
      // The store is unreachable (or refused): keep running only while the lease surely has not
      // run out. The next renewal tries again; the error itself changes nothing.
      if (this.#held && this.#now() - this.#lastRenewStart >= ttlMs) await this.#lose();
    }
  }

  #begin(lease: Lease): void {
    const controller = new AbortController();
    const done = this.#options.singleton
      .run({ signal: controller.signal, token: lease.token, holder: this.#options.holder })
      .catch((err: unknown) =>
        // The singleton's term ends with its run; the next lease it wins starts it again.
        (this.#options.logger ?? silentLogger).warn(
          { singleton: this.#options.singleton.name, error: describeError(err) },
          'singleton failed',
        ),
      );
    this.#job = { controller, done };
    this.#options.onChange?.('acquired', lease);
  }

  async #lose(event: 'lost' | 'released' = 'lost'): Promise<void> {
    const job = this.#job;
    const lease = this.#held;
    this.#job = undefined;
    this.#held = undefined;
    if (job) {
      job.controller.abort();
      await job.done;
      this.#options.onChange?.(event, lease);
    }
  }
}
