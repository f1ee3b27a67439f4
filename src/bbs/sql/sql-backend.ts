import type { Kysely } from 'kysely';
import type { BbsDatabase } from './bbs-database.js';
import type { SqlDialectKind } from './bbs-migrations.js';

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
 * The store above it is one implementation for both.
 */
export interface SqlBackend {
  readonly kind: SqlDialectKind;
  readonly db: Kysely<BbsDatabase>;
  /** True when SELECT … FOR UPDATE is needed (PostgreSQL); SQLite's writer lock already serializes. */
  readonly lockRows: boolean;
  /** A read-write transaction, retried on deadlock/serialization failures. */
  write<T>(fn: (tx: Kysely<BbsDatabase>) => Promise<T>): Promise<T>;
  /** A read-only transaction that sees one consistent snapshot. */
  read<T>(fn: (tx: Kysely<BbsDatabase>) => Promise<T>): Promise<T>;
  /** Runs the migrations under a lock that only one server at a time can hold. */
  migrate(apply: (tx: Kysely<BbsDatabase>) => Promise<unknown>): Promise<void>;
  /** Events after (txid, id) in the order their transactions committed; only finished ones. */
  readEvents(
    tx: Kysely<BbsDatabase>,
    afterTxid: number,
    afterId: number,
    limit: number,
  ): Promise<RawEventRow[]>;
  /**
   * A consistent read-only snapshot whose queries return positional rows (arrays), bypassing the
   * query builder: the convergence read of 250,000 ActualLRPs spends its time creating values, and
   * arrays cost half of keyed row objects. SQL is written with `?` placeholders.
   */
  readRows<T>(fn: (query: RowQuery) => Promise<T>): Promise<T>;
  isUniqueViolation(err: unknown): boolean;
  close(): Promise<void>;
}
