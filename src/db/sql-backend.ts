import type { Generated, Kysely } from 'kysely';

export type SqlDialectKind = 'sqlite' | 'postgres';

/**
 * The one table the db layer itself writes: the event log every owner (bbs, history) appends to
 * through `EventLog`. Its DDL is migration 1 of the BBS's list (it shipped there first, and a
 * released migration is never edited), its rows are the db layer's.
 */
export interface EventRow {
  id: Generated<number | string>;
  /** PostgreSQL: the writing transaction's id, so readers can wait for slower commits (see readEvents). */
  txid: Generated<number | string>;
  type: string;
  data: string;
  created_at: string;
}

/** The tables the db layer knows; each owner views the handle with its own (`withTables`). */
// A type alias, not an interface: kysely's withTables wants an index-signature-compatible shape.
export type DbTables = {
  events: EventRow;
};

/** A raw event row as both backends return it. */
export interface RawEventRow {
  readonly id: number | string;
  readonly txid: number | string;
  readonly type: string;
  readonly data: string;
  readonly created_at: string;
}

/** Runs `text` and maps each positional row as it is read (rows never pile up before mapping). */
export type RowQuery = <T>(
  text: string,
  params: readonly unknown[],
  map: (row: unknown[]) => T,
) => Promise<T[]>;

/**
 * What differs between SQLite and PostgreSQL beyond SQL text: how a transaction begins, how rows
 * are locked, how the event log is read in commit order, which errors mean "retry" or "duplicate".
 * The stores above it (bbs, history, model) are one implementation for both.
 */
export interface SqlBackend {
  readonly kind: SqlDialectKind;
  readonly db: Kysely<DbTables>;
  /** True when SELECT … FOR UPDATE is needed (PostgreSQL); SQLite's writer lock already serializes. */
  readonly lockRows: boolean;
  /** A read-write transaction, retried on deadlock/serialization failures. */
  write<T>(fn: (tx: Kysely<DbTables>) => Promise<T>): Promise<T>;
  /** A read-only transaction that sees one consistent snapshot. */
  read<T>(fn: (tx: Kysely<DbTables>) => Promise<T>): Promise<T>;
  /** Runs `apply` in one transaction under a lock that only one server at a time can hold. */
  migrate(apply: (tx: Kysely<DbTables>) => Promise<unknown>): Promise<void>;
  /** Events after (txid, id) in the order their transactions committed; only finished ones. */
  readEvents(tx: Kysely<DbTables>, afterTxid: number, afterId: number, limit: number): Promise<RawEventRow[]>;
  /** The last event readEvents can return now (undefined: none kept); reading after it waits for new ones. */
  headEvent(tx: Kysely<DbTables>): Promise<{ readonly txid: number; readonly id: number } | undefined>;
  /**
   * A consistent read-only snapshot whose queries return positional rows (arrays), bypassing the
   * query builder: the convergence read of 250,000 ActualLRPs spends its time creating values, and
   * arrays cost half of keyed row objects. SQL is written with `?` placeholders.
   */
  readRows<T>(fn: (query: RowQuery) => Promise<T>): Promise<T>;
  isUniqueViolation(err: unknown): boolean;
  /**
   * PostgreSQL: listens on the events channel on a connection of its own (reconnecting while it
   * is open) and hands each notification's payload to `onPayload`; returns how to stop. Absent on
   * SQLite, where only one server writes a database file.
   */
  listenEvents?(onPayload: (payload: string) => void): () => Promise<void>;
  close(): Promise<void>;
}

/** `?` placeholders → `$1, $2, …` (constant SQL here never has a literal "?"). */
export function numbered(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}
