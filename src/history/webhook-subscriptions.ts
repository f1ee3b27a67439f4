import { randomUUID } from 'node:crypto';
import {
  type BackoffPolicy,
  backoffDelayMs,
  type CallbackTargetPolicy,
  checkCallbackUrl,
  InvalidArgumentError,
  NotFoundError,
  refusedCallbackTarget,
  runLoop,
  Wakeup,
} from '../core/index.js';
import type { HistoryStore } from './history-store.js';

export interface Subscription {
  readonly id: string;
  readonly url: string;
  /** Item statuses that are delivered; empty = all. */
  readonly statuses: readonly string[];
  readonly created_at: string;
  readonly created_by: string | null;
}

export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** One row of the visible delivery log. */
export interface Delivery {
  readonly id: string;
  readonly state: DeliveryState;
  readonly attempts: number;
  readonly next_attempt_at: string;
  readonly last_status: number | null;
  readonly last_error: string | null;
  readonly created_at: string;
  readonly updated_at: string;
  readonly payload: unknown;
}

export interface SubscriptionWithDeliveries extends Subscription {
  readonly deliveries: readonly Delivery[];
  readonly counts: Readonly<Record<DeliveryState, number>>;
}

export interface WebhookOptions {
  readonly now?: () => Date;
  readonly random?: () => number;
  /** POSTs one payload; resolves with the HTTP status (2xx = delivered). */
  readonly send?: (url: string, body: string) => Promise<number>;
  readonly backoff?: BackoffPolicy;
  /** After this many failed attempts a delivery is `failed` and no longer retried. */
  readonly maxAttempts?: number;
  readonly batch?: number;
  /** Accept and POST to loopback, link-local and unspecified addresses (src/core/callback-target.ts). */
  readonly allowPrivateTargets?: boolean;
}

const webhookBackoff: BackoffPolicy = { initialMs: 1000, capMs: 5 * 60_000, jitter: true };

/**
 * Webhook subscriptions to container status changes. The history store queues a delivery per
 * matching item in the same transaction that records it, so no change is missed between a crash
 * and a restart; `deliverDue` then POSTs due deliveries and reschedules failures with back-off.
 */
export class WebhookSubscriptions {
  readonly #history: HistoryStore;
  readonly #now: () => Date;
  readonly #random: () => number;
  readonly #send: (url: string, body: string) => Promise<number>;
  readonly #backoff: BackoffPolicy;
  readonly #maxAttempts: number;
  readonly #batch: number;
  readonly #targets: CallbackTargetPolicy;

  constructor(history: HistoryStore, options: WebhookOptions = {}) {
    this.#history = history;
    this.#now = options.now ?? (() => new Date());
    this.#random = options.random ?? Math.random;
    this.#send = options.send ?? postJson;
    this.#backoff = options.backoff ?? webhookBackoff;
    this.#maxAttempts = options.maxAttempts ?? 10;
    this.#batch = options.batch ?? 50;
    this.#targets = { allowPrivate: options.allowPrivateTargets === true };
  }

  async create(req: {
    url: string;
    statuses?: readonly string[];
    created_by?: string | null;
  }): Promise<Subscription> {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      throw new InvalidArgumentError(`Invalid url "${req.url}": expected an http(s) URL`, { field: 'url' });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new InvalidArgumentError(`Invalid url "${req.url}": expected an http(s) URL`, { field: 'url' });
    }
    checkCallbackUrl(req.url, 'url', this.#targets);
    const sub: Subscription = {
      id: randomUUID(),
      url: url.href,
      statuses: [...new Set(req.statuses ?? [])],
      created_at: this.#now().toISOString(),
      created_by: req.created_by ?? null,
    };
    await this.#history.write((db) =>
      db
        .insertInto('subscriptions')
        .values({ ...sub, statuses: JSON.stringify(sub.statuses), removed_at: null })
        .execute(),
    );
    return sub;
  }

  async list(): Promise<Subscription[]> {
    const rows = await this.#history.read((db) =>
      db
        .selectFrom('subscriptions')
        .selectAll()
        .where('removed_at', 'is', null)
        .orderBy('created_at')
        .execute(),
    );
    return rows.map(toSubscription);
  }

  /** The subscription with its newest deliveries (the delivery log) and counts by state. */
  async get(id: string, limit = 50): Promise<SubscriptionWithDeliveries> {
    return this.#history.read(async (db) => {
      const row = await db
        .selectFrom('subscriptions')
        .selectAll()
        .where('id', '=', id)
        .where('removed_at', 'is', null)
        .executeTakeFirst();
      if (!row) throw new NotFoundError('subscription', id);
      const deliveries = await db
        .selectFrom('subscription_deliveries')
        .selectAll()
        .where('subscription_id', '=', id)
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
      const counts = await db
        .selectFrom('subscription_deliveries')
        .select(['state', db.fn.countAll<number | string>().as('n')])
        .where('subscription_id', '=', id)
        .groupBy('state')
        .execute();
      const byState: Record<DeliveryState, number> = { pending: 0, delivered: 0, failed: 0 };
      for (const c of counts) byState[c.state as DeliveryState] = Number(c.n);
      return {
        ...toSubscription(row),
        counts: byState,
        deliveries: deliveries.map((d) => ({
          id: String(d.id),
          state: d.state as DeliveryState,
          attempts: Number(d.attempts),
          next_attempt_at: d.next_attempt_at,
          last_status: d.last_status === null ? null : Number(d.last_status),
          last_error: d.last_error,
          created_at: d.created_at,
          updated_at: d.updated_at,
          payload: JSON.parse(d.payload) as unknown,
        })),
      };
    });
  }

  async remove(id: string): Promise<void> {
    const now = this.#now().toISOString();
    const result = await this.#history.write(async (db) => {
      const updated = await db
        .updateTable('subscriptions')
        .set({ removed_at: now })
        .where('id', '=', id)
        .where('removed_at', 'is', null)
        .executeTakeFirst();
      // Nothing more goes to a removed subscription.
      await db
        .updateTable('subscription_deliveries')
        .set({ state: 'failed', last_error: 'subscription removed', updated_at: now })
        .where('subscription_id', '=', id)
        .where('state', '=', 'pending')
        .execute();
      return Number(updated.numUpdatedRows);
    });
    if (result === 0) throw new NotFoundError('subscription', id);
  }

  /**
   * Sends the deliveries that are due, oldest first, and returns how many were attempted. A
   * delivery is claimed by moving its next attempt past the request timeout before sending, so a
   * second server (or a crash mid-send) retries it later instead of sending it twice at once.
   */
  async deliverDue(): Promise<number> {
    const now = this.#now();
    const claimUntil = new Date(now.getTime() + 60_000).toISOString();
    const due = await this.#history.write(async (db) => {
      const rows = await db
        .selectFrom('subscription_deliveries')
        .innerJoin('subscriptions', 'subscriptions.id', 'subscription_deliveries.subscription_id')
        .select([
          'subscription_deliveries.id',
          'subscription_deliveries.payload',
          'subscription_deliveries.attempts',
          'subscriptions.url',
        ])
        .where('subscription_deliveries.state', '=', 'pending')
        .where('subscription_deliveries.next_attempt_at', '<=', now.toISOString())
        .orderBy('subscription_deliveries.id')
        .limit(this.#batch)
        .execute();
      if (rows.length > 0) {
        await db
          .updateTable('subscription_deliveries')
          .set({ next_attempt_at: claimUntil })
          .where(
            'id',
            'in',
            rows.map((r) => r.id),
          )
          .execute();
      }
      return rows;
    });
    for (const delivery of due) {
      const attempts = Number(delivery.attempts) + 1;
      let status: number | null = null;
      let error: string | null = null;
      // A host that resolves to loopback or link-local now is refused for good, not retried.
      const refused = await refusedCallbackTarget(delivery.url, this.#targets);
      try {
        if (refused !== undefined) error = refused;
        else {
          status = await this.#send(delivery.url, delivery.payload);
          if (status < 200 || status >= 300) error = `HTTP ${status}`;
        }
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      const at = this.#now();
      const state: DeliveryState =
        error === null
          ? 'delivered'
          : refused !== undefined || attempts >= this.#maxAttempts
            ? 'failed'
            : 'pending';
      const next = new Date(
        at.getTime() + backoffDelayMs(attempts, this.#backoff, this.#random()),
      ).toISOString();
      await this.#history.write((db) =>
        db
          .updateTable('subscription_deliveries')
          .set({
            state,
            attempts,
            last_status: status,
            last_error: error,
            updated_at: at.toISOString(),
            next_attempt_at: state === 'pending' ? next : at.toISOString(),
          })
          .where('id', '=', delivery.id)
          .execute(),
      );
    }
    return due.length;
  }

  /** Delivers until `signal` aborts: right after `wake()` (a new item was recorded) or every `pollMs`. */
  run(options: { signal: AbortSignal; pollMs?: number; onError?: (err: unknown) => void }): Promise<void> {
    const pollMs = options.pollMs ?? 1000;
    return runLoop({
      name: 'webhook delivery',
      signal: options.signal,
      intervalMs: pollMs,
      wakeup: this.#newItems,
      // A failed round (the history store unreachable) is tried again after the poll interval.
      backoff: { initialMs: pollMs, capMs: pollMs },
      ...(options.onError ? { onError: options.onError } : {}),
      // A full batch means more may be due: go on at once.
      round: async () => ((await this.deliverDue()) > 0 ? { nextInMs: 0 } : undefined),
    });
  }

  readonly #newItems = new Wakeup();

  /** Called when new items were recorded in this process: deliver without waiting for the poll. */
  wake(): void {
    this.#newItems.wake();
  }
}

function toSubscription(row: {
  id: string;
  url: string;
  statuses: string;
  created_at: string;
  created_by: string | null;
}): Subscription {
  return {
    id: row.id,
    url: row.url,
    statuses: JSON.parse(row.statuses) as string[],
    created_at: row.created_at,
    created_by: row.created_by,
  };
}

async function postJson(url: string, body: string): Promise<number> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': 'berth-webhooks/1' },
    body,
    signal: AbortSignal.timeout(10_000),
  });
  await response.body?.cancel();
  return response.status;
}
