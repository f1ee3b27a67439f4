import { randomUUID } from 'node:crypto';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { type DbTables, numbered, type SqlBackend } from './sql-backend.js';

/** An event as its owner builds it: `type` is its column, every other field its JSON `data`. */
export interface EventBody {
  readonly type: string;
}

/** Rows per multi-row INSERT: far below SQLite's and PostgreSQL's bound-parameter limits. */
const insertChunk = 400;
const insertEventSql = 'INSERT INTO events (type, data, created_at) VALUES (?, ?, ?)';

/**
 * The one writer of the `events` table. Every owner that appends events (the BBS's mutations,
 * history's ingest) writes through `write`, so the rows commit with the change they describe and,
 * once committed, the listeners (SSE streams, the callback worker, the auctioneer) wake at once
 * instead of on their next poll. One instance per database handle: every store on it shares the
 * listeners. On PostgreSQL every commit that appended events also NOTIFYs the other servers of the
 * database, whose listeners wake the same way (a write through one server wakes the auctioneer
 * that holds the lease on another).
 */
export class EventLog {
  readonly #backend: SqlBackend;
  readonly #listeners = new Set<CommittedEventsListener>();
  /** Tells this log's own notifications (already announced in process) from other servers'. */
  readonly #origin = randomUUID();
  #stopListening: (() => Promise<void>) | undefined;
  /** On PostgreSQL, what tells the other servers of commits (postCommitNotifier); else undefined. */
  readonly #notify: ((types: readonly string[]) => void) | undefined;

  constructor(backend: SqlBackend) {
    this.#backend = backend;
    this.#notify =
      backend.kind === 'postgres'
        ? postCommitNotifier((types) =>
            sql`SELECT pg_notify(${eventsChannel}, ${eventsNotification(this.#origin, types)})`
              .execute(backend.db)
              .then(() => {}),
          )
        : undefined;
  }

  /**
   * Wake-up after a commit that appended events (this process's, or on PostgreSQL another
   * server's); the listener is told their types, so a service that acts on a few (the auctioneer
   * on new work) ignores the rest. The first listener opens the database's notification channel.
   */
  onEvents(listener: CommittedEventsListener): () => void {
    this.#listeners.add(listener);
    if (!this.#stopListening && this.#backend.listenEvents)
      this.#stopListening = this.#backend.listenEvents((payload) => this.#notified(payload));
    return () => this.#listeners.delete(listener);
  }

  /** Closes the notification channel (the database is closing). */
  async close(): Promise<void> {
    const stop = this.#stopListening;
    this.#stopListening = undefined;
    await stop?.();
  }

  #notified(payload: string): void {
    const parsed = parseEventsNotification(payload);
    if (!parsed || parsed.origin === this.#origin || parsed.types.length === 0) return;
    for (const listener of this.#listeners) listener(parsed.types);
  }

  /**
   * A write transaction: `fn` gets the clock's reading for this attempt (a retried transaction
   * reads it again) and an array to push its events onto; they are inserted at the end of the
   * transaction, stamped with that reading, and announced after it committed.
   */
  async write<T, E extends EventBody = EventBody>(
    clock: () => Date,
    fn: (tx: Kysely<DbTables>, at: Date, events: E[]) => Promise<T>,
  ): Promise<T> {
    let types: string[] = [];
    const result = await this.#backend.write(async (tx) => {
      const at = clock();
      const events: E[] = [];
      const value = await fn(tx, at, events);
      await this.#insert(tx, events, at.toISOString());
      // A retried transaction replaces what an aborted attempt pushed.
      types = events.map((e) => e.type);
      return value;
    });
    if (types.length > 0) {
      this.#notify?.(types);
      for (const listener of this.#listeners) listener(types);
    }
    return result;
  }

  #insert(tx: Kysely<DbTables>, events: readonly EventBody[], createdAt: string): Promise<void> {
    return insertEvents(tx, this.#backend.kind, events, createdAt, { notify: false });
  }
}

/**
 * Appends events inside a transaction: `EventLog.write`'s, or one of its own (the model's writes,
 * which run under their own lock). The rows commit with it. On PostgreSQL a model write's commit
 * also notifies every server's event log (`notify`, the default); `EventLog.write` notifies after
 * its commit instead (postCommitNotifier). On SQLite a write outside `EventLog.write` wakes
 * nobody, and streams read it on their next look.
 */
export async function insertEvents(
  tx: Kysely<DbTables>,
  kind: SqlBackend['kind'],
  events: readonly EventBody[],
  createdAt: string,
  options: { readonly notify: boolean } = { notify: true },
): Promise<void> {
  if (events.length === 0) return;
  if (kind === 'postgres' && options.notify) {
    // Delivered when (and only if) this transaction commits, to every server LISTENing.
    const payload = eventsNotification(
      '',
      events.map((e) => e.type),
    );
    await sql`SELECT pg_notify(${eventsChannel}, ${payload})`.execute(tx);
  }
  if (events.length === 1) {
    // The common case, one event per CAS: constant SQL, a prepared statement on PostgreSQL.
    const { type, ...data } = events[0]!;
    await tx.executeQuery(CompiledQuery.raw(insertOneSql[kind], [type, JSON.stringify(data), createdAt]));
    return;
  }
  for (let i = 0; i < events.length; i += insertChunk) {
    await tx
      .insertInto('events')
      .values(
        events.slice(i, i + insertChunk).map((event) => {
          const { type, ...data } = event;
          return { type, data: JSON.stringify(data), created_at: createdAt };
        }),
      )
      .execute();
  }
}

/** Told after a commit which event types it appended (in order, repeats kept). */
export type CommittedEventsListener = (types: readonly string[]) => void;

export function insertEventSqlFor(kind: SqlBackend['kind']): string {
  return insertOneSql[kind];
}

const insertOneSql: Readonly<Record<SqlBackend['kind'], string>> = {
  sqlite: insertEventSql,
  postgres: numbered(insertEventSql),
};

/** The PostgreSQL channel of committed events. */
export const eventsChannel = 'berth_events';

/** `ORIGIN TYPE,TYPE…`, each type once: far below NOTIFY's 8,000-byte payload. */
export function eventsNotification(origin: string, types: readonly string[]): string {
  return `${origin} ${[...new Set(types)].join(',')}`;
}

export function parseEventsNotification(
  payload: string,
): { readonly origin: string; readonly types: string[] } | undefined {
  const space = payload.indexOf(' ');
  if (space < 0) return undefined;
  const types = payload
    .slice(space + 1)
    .split(',')
    .filter((t) => /^[a-z_]{1,64}$/.test(t));
  return { origin: payload.slice(0, space), types };
}

/**
 * Tells the other servers of commits with one NOTIFY at a time, after the commits, coalescing
 * what commits meanwhile into the next. A NOTIFY inside a write transaction takes PostgreSQL's
 * database-wide notify lock until the transaction ends, fsync included, so every write of every
 * server went one at a time: in a burst each of the cells' claims and starts waited 0.6–2.6 s
 * behind the others (docs/performance.md, round 12). A NOTIFY of its own commits nothing to the
 * WAL and holds that lock only for itself. Lost if the server dies between its commit and the
 * NOTIFY, as one sent while a listener reconnects is: every consumer keeps its periodic pass.
 */
export function postCommitNotifier(
  send: (types: readonly string[]) => Promise<void>,
): (types: readonly string[]) => void {
  let pending = new Set<string>();
  let sending = false;
  const drain = async (): Promise<void> => {
    sending = true;
    while (pending.size > 0) {
      const types = [...pending];
      pending = new Set();
      // catch-all: a NOTIFY that fails (the database restarting) is a wake-up lost; the passes cover it.
      await send(types).catch(() => {});
    }
    sending = false;
  };
  return (types) => {
    for (const type of types) pending.add(type);
    if (!sending) void drain();
  };
}
