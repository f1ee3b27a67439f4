/**
 * Group commit for SQLite's one connection. Every write transaction used to pay its own COMMIT:
 * the WAL append of every page it dirtied, and at every 1,000 pages a checkpoint on the event
 * loop. Under a burst, COMMIT took 44 % of the server's time in SQL (3.7 s of 8.5 s over a
 * 20,000-instance burst, 254 µs a COMMIT on average). Writes that arrive in one turn of the
 * event loop now share one transaction, each in its own SAVEPOINT, and commit together.
 *
 * What each caller sees is unchanged:
 * - its promise settles only after the COMMIT that holds its writes (or after its own failure);
 * - a write that throws is rolled back to its savepoint, and only it fails; the others commit;
 * - the members run one after the other, so the batch is the same as running them serially in
 *   the order they came (each sees the ones before it, as it would have after their commits);
 * - if SQLite rolls the whole transaction back (an I/O error, a full disk) or the COMMIT fails,
 *   every member of the batch fails and none of their writes stays.
 *
 * A batch holds the connection from its BEGIN to the end of the event loop's turn in which it
 * began (`setImmediate`) or, on a busy server whose turns are long, until the first of its writes
 * that ends after it has been open `maxOpenMs`: reads queued behind it, and its own callers, wait
 * no longer than that. Writes that come after the batch has started closing open the next one.
 */

/**
 * What a batch needs of the connection: run one SQL statement, whether a transaction is open, and
 * the handle the members' writes go through.
 */
export interface BatchConnection<Tx> {
  exec(statement: string): void;
  inTransaction(): boolean;
  readonly tx: Tx;
}

/** Runs `fn` holding the one connection; resolves with what it resolves. */
export type WithConnection<Tx> = (fn: (connection: BatchConnection<Tx>) => Promise<void>) => Promise<void>;

interface Member<Tx> {
  readonly run: (tx: Tx) => Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

export interface WriteBatchOptions {
  /** Maps a failure to what the callers see (SQLite's busy errors to berth's). */
  readonly mapError?: (err: unknown) => unknown;
  /** Monotonic milliseconds. */
  readonly now?: () => number;
  /** A batch open this long commits once the write it is running ends. */
  readonly maxOpenMs?: number;
  /** Writes a batch takes at most (bounds the work one COMMIT can lose). */
  readonly maxMembers?: number;
}

interface BatchLimits {
  readonly mapError: (err: unknown) => unknown;
  readonly now: () => number;
  readonly maxOpenMs: number;
  readonly maxMembers: number;
}

/**
 * Under a 20,000-instance burst, 3 ms keeps most of the batching (3 writes a COMMIT on average)
 * while a request's answer waits at most a few milliseconds more than its own work.
 */
const defaultMaxOpenMs = 3;

export class SqliteWriteBatches<Tx> {
  readonly #withConnection: WithConnection<Tx>;
  readonly #limits: BatchLimits;
  #open: Batch<Tx> | undefined;

  constructor(withConnection: WithConnection<Tx>, options: WriteBatchOptions = {}) {
    this.#withConnection = withConnection;
    this.#limits = {
      mapError: options.mapError ?? ((err) => err),
      now: options.now ?? (() => performance.now()),
      maxOpenMs: options.maxOpenMs ?? defaultMaxOpenMs,
      maxMembers: options.maxMembers ?? 256,
    };
  }

  /** Runs `fn` in the open batch's transaction (opening one if none takes members now). */
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    let batch = this.#open;
    if (!batch?.accepting()) {
      batch = new Batch<Tx>(this.#limits);
      this.#open = batch;
      const started = batch;
      this.#withConnection((connection) => started.drive(connection))
        // The connection could not be had (the database is closing): nothing ran, all fail.
        .catch((err: unknown) => started.abandon(this.#limits.mapError(err)))
        .finally(() => {
          if (this.#open === started) this.#open = undefined;
        });
    }
    return batch.add(fn);
  }
}

class Batch<Tx> {
  readonly #limits: BatchLimits;
  readonly #queue: Member<Tx>[] = [];
  /** Members whose writes are in the transaction, waiting for its COMMIT. */
  readonly #done: { readonly member: Member<Tx>; readonly value: unknown }[] = [];
  #members = 0;
  #closing = false;
  /** Wakes the driver when a member joins while it waits. */
  #wake: (() => void) | undefined;

  constructor(limits: BatchLimits) {
    this.#limits = limits;
  }

  accepting(): boolean {
    return !this.#closing && this.#members < this.#limits.maxMembers;
  }

  add<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    this.#members++;
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ run: fn, resolve: resolve as (value: unknown) => void, reject });
      this.#wake?.();
    });
  }

  /**
   * Holds the connection: BEGIN, the members as they come until the turn ends, COMMIT. Once the
   * transaction has been open `maxOpenMs`, it commits after the member running then, the batch
   * takes no one new, and the members already queued (one caller's many writes of one turn) go
   * in a transaction of their own, and so on.
   */
  async drive(connection: BatchConnection<Tx>): Promise<void> {
    let openedAt = 0;
    const begin = () => {
      connection.exec('BEGIN IMMEDIATE');
      openedAt = this.#limits.now();
    };
    const commit = () => {
      connection.exec('COMMIT');
      for (const { member, value } of this.#done.splice(0)) member.resolve(value);
    };
    try {
      begin();
    } catch (err) {
      this.abandon(this.#limits.mapError(err));
      return;
    }
    let turnEnded = false;
    const endOfTurn = setImmediate(() => {
      turnEnded = true;
      this.#wake?.();
    });
    try {
      for (;;) {
        const member = this.#queue.shift();
        if (member) {
          await this.#runMember(connection, member);
          if (!connection.inTransaction()) {
            // SQLite rolled everything back (an I/O error, a full disk): no member's writes stay.
            this.abandon(this.#limits.mapError(new Error('SQLite rolled the write transaction back')));
            return;
          }
          if (this.#limits.now() - openedAt >= this.#limits.maxOpenMs) {
            this.#closing = true;
            commit();
            if (this.#queue.length === 0) return;
            begin();
          }
          continue;
        }
        if (turnEnded || this.#closing || this.#members >= this.#limits.maxMembers) break;
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        this.#wake = undefined;
      }
      this.#closing = true;
      commit();
    } catch (err) {
      // What this transaction held is lost: its members fail, and those still queued.
      if (connection.inTransaction()) connection.exec('ROLLBACK');
      this.abandon(this.#limits.mapError(err));
    } finally {
      clearImmediate(endOfTurn);
    }
  }

  async #runMember(connection: BatchConnection<Tx>, member: Member<Tx>): Promise<void> {
    try {
      connection.exec('SAVEPOINT berth_write');
      const value = await member.run(connection.tx);
      connection.exec('RELEASE berth_write');
      this.#done.push({ member, value });
    } catch (err) {
      member.reject(this.#limits.mapError(err));
      // Only this member's writes go; if undoing them fails, the driver fails the whole batch.
      if (connection.inTransaction()) {
        connection.exec('ROLLBACK TO berth_write');
        connection.exec('RELEASE berth_write');
      }
    }
  }

  /** Fails every member not yet settled: none of the batch's writes stays. */
  abandon(err: unknown): void {
    this.#closing = true;
    for (const { member } of this.#done.splice(0)) member.reject(err);
    for (const member of this.#queue.splice(0)) member.reject(err);
  }
}
