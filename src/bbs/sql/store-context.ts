import type { Kysely } from 'kysely';
import { InvalidArgumentError, NotFoundError } from '../../core/index.js';
import type { SqlBackend, SqlDatabase } from '../../db/index.js';
import type { ListPage } from '../bbs-store.js';
import type { BbsEventBody } from '../bbs-store-log.js';
import type { ModificationTag } from '../bbs-types.js';
import { CasConflictError, tagsEqual } from '../cas-conflict-error.js';
import { type CellPacingLimits, defaultCellPacing } from '../cell-pacing.js';
import type { BbsDatabase } from './bbs-database.js';
import { hotSqlByKind } from './hot-statements.js';

export type Db = Kysely<BbsDatabase>;

/** What a record read needs: a handle, whether to lock what it reads, the hot statements. */
export interface Reader {
  readonly db: Db;
  /** Which database: the few statements built at run time differ in their placeholders. */
  readonly kind: SqlBackend['kind'];
  /** True when SELECT … FOR UPDATE is needed (PostgreSQL); SQLite's writer lock already serializes. */
  readonly lockRows: boolean;
  readonly sql: (typeof hotSqlByKind)['sqlite'];
}

/** One write transaction: its handle, its clock reading, and the events it will append. */
export interface Tx extends Reader {
  readonly isUniqueViolation: (err: unknown) => boolean;
  readonly now: string;
  readonly nowMs: number;
  readonly events: BbsEventBody[];
}

export interface SqlBbsStoreOptions {
  /** The store's clock; tests inject one. */
  readonly now?: () => Date;
  /** Called once per CAS that lost, with the operation's name (for `/metrics`). */
  readonly onCasConflict?: (operation: string) => void;
  /** How many heartbeats and passes the cells may send (default `defaultCellPacing`). */
  readonly cellPacing?: CellPacingLimits;
}

/** Rows per multi-row INSERT: far below SQLite's and PostgreSQL's bound-parameter limits. */
export const insertChunk = 400;

/**
 * What every resource module of the SQL store shares: the database handle, the BBS's view of its
 * tables, the clock, and `mutate`, the one way a public mutation runs (one transaction whose
 * events the db layer's EventLog appends and announces).
 */
export class StoreContext implements Reader {
  readonly database: SqlDatabase;
  readonly backend: SqlBackend;
  /** Reads outside a transaction. */
  readonly db: Db;
  readonly sql: (typeof hotSqlByKind)['sqlite'];
  readonly now: () => Date;
  readonly cellPacing: CellPacingLimits;
  readonly #onCasConflict: (operation: string) => void;

  constructor(database: SqlDatabase, options: SqlBbsStoreOptions) {
    this.database = database;
    this.backend = database.backend;
    this.db = database.backend.db.withTables<BbsDatabase>();
    this.sql = hotSqlByKind[database.backend.kind];
    this.now = options.now ?? (() => new Date());
    this.cellPacing = options.cellPacing ?? defaultCellPacing;
    this.#onCasConflict = options.onCasConflict ?? (() => {});
  }

  get lockRows(): boolean {
    return this.backend.lockRows;
  }

  get kind(): SqlBackend['kind'] {
    return this.backend.kind;
  }

  async mutate<T>(operation: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await this.database.events.write(this.now, (db, at, events: BbsEventBody[]) =>
        fn({
          db: db.withTables<BbsDatabase>(),
          kind: this.backend.kind,
          lockRows: this.backend.lockRows,
          sql: this.sql,
          isUniqueViolation: (err) => this.backend.isUniqueViolation(err),
          now: at.toISOString(),
          nowMs: at.getTime(),
          events,
        }),
      );
    } catch (err) {
      if (err instanceof CasConflictError) this.#onCasConflict(operation);
      throw err;
    }
  }
}

/** The record a conditional write was decided on: what a lost CAS is reported against. */
export interface CasTarget<R> {
  readonly kind: string;
  readonly id: string;
  readonly expected: ModificationTag | null;
  /** Reads the record as it is now (no lock: the write already lost). */
  reload(): Promise<R | undefined>;
}

/**
 * The one CAS write: `write` is an UPDATE or DELETE conditioned on the record's tag and returns
 * the rows it changed. One row means it won. None means the record moved on or went away since it
 * was read: reload it once and throw not_found, or a CasConflictError carrying it.
 */
export async function casWrite<R>(write: () => Promise<bigint>, target: CasTarget<R>): Promise<void> {
  if ((await write()) === 1n) return;
  const current = await target.reload();
  if (current === undefined) throw new NotFoundError(target.kind, target.id);
  throw new CasConflictError(target.kind, target.id, target.expected, current);
}

/**
 * The precondition half of a CAS: the record a mutation decides on, read (and locked) in its
 * transaction, must exist and, when the caller gave a tag, carry it.
 */
export function requireTag<R extends { readonly modification_tag: ModificationTag }>(
  current: R | undefined,
  kind: string,
  id: string,
  expected: ModificationTag | undefined,
): R {
  if (current === undefined) throw new NotFoundError(kind, id);
  if (expected && !tagsEqual(current.modification_tag, expected)) {
    throw new CasConflictError(kind, id, expected, current);
  }
  return current;
}

/** A page size is a positive integer: anything else would read everything or nothing. */
export function validatePage(page: ListPage<unknown>): void {
  if (page.limit !== undefined && !(Number.isSafeInteger(page.limit) && page.limit >= 1)) {
    throw new InvalidArgumentError(`Invalid limit ${String(page.limit)}: expected a positive integer`, {
      field: 'limit',
    });
  }
}

/** `exactOptionalPropertyTypes`: a present-but-undefined field must not reach the stored JSON. */
export function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

export function nextTag(tag: ModificationTag): ModificationTag {
  return { epoch: tag.epoch, index: tag.index + 1 };
}
