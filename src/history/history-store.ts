import type { Insertable, Selectable } from 'kysely';
import { InvalidArgumentError, NotFoundError } from '../core/index.js';
import type { SqlBackend, SqlDatabase } from '../db/index.js';
import {
  type ContainerRowUpdate,
  lockContainerRows,
  writeContainerLogs,
  writeContainerRows,
} from './container-row-writes.js';
import {
  canonicalTimestamp,
  compareIds,
  compareItems,
  effectiveTime,
  foldStatus,
  stepStatus,
  type TopLevelStatus,
} from './container-status.js';
import type { ContainerRow, HistoryDb, HistoryRow, HistoryTables } from './history-database.js';
import { historyMigrationList } from './history-migrations.js';
import type {
  ContainerLaunch,
  ContainerOutput,
  ContainerRecord,
  ContainerWithHistory,
  EntityType,
  HistoryItem,
  OwnerKind,
} from './history-types.js';
import { pending, prepareIngest } from './ingest-preparation.js';
import type { IngestRecord, IngestResult } from './ingest-records.js';
import { finalOutcome } from './status-mapping.js';

/** The bus event every newly recorded history item puts on `GET /v1/events`. */
export const containerEventType = 'container_status_changed';

export interface ContainerStatusEvent {
  readonly type: typeof containerEventType;
  readonly container: Pick<
    ContainerRecord,
    'id' | 'image' | 'cell_id' | 'owner_kind' | 'owner_id' | 'system' | 'status' | 'status_time'
  >;
  readonly item: HistoryItem;
}

export interface ListContainersRequest {
  readonly status?: string;
  readonly system?: string;
  /** ISO-8601: only containers with a history item recorded at or after it. */
  readonly since?: string;
  readonly limit?: number;
  /** `next_cursor` of the previous page. */
  readonly cursor?: string;
}

export interface ContainerPage {
  readonly containers: ContainerRecord[];
  /** Absent on the last page. */
  readonly next_cursor?: string;
}

export interface ContainerLogs {
  readonly container_id: string;
  readonly text: string;
  readonly size: number;
  readonly truncated: boolean;
}

export interface HistoryStoreOptions {
  readonly now?: () => Date;
  /** Logs kept per container, in characters; more is cut from the front (the end matters most). */
  readonly maxLogChars?: number;
  /** Called after a commit that recorded items (in-process wake-up of streams and webhooks). */
  readonly onRecorded?: () => void;
}

const defaultMaxLogChars = 1024 * 1024;
const insertChunk = 200;
const maxPage = 1000;

/**
 * Container records and their history on the BBS database (SQLite or PostgreSQL). One `ingest`
 * is one transaction: items are inserted with ON CONFLICT DO NOTHING on their dedupe key (so
 * re-delivery is harmless), top-level statuses are stepped (or refolded when an item arrives
 * out of order), and every new item becomes a bus event and webhook deliveries in the same commit.
 */
export class HistoryStore {
  readonly #database: SqlDatabase;
  readonly #backend: SqlBackend;
  readonly #now: () => Date;
  readonly #maxLogChars: number;
  readonly #onRecorded: () => void;

  private constructor(database: SqlDatabase, options: HistoryStoreOptions) {
    this.#database = database;
    this.#backend = database.backend;
    this.#now = options.now ?? (() => new Date());
    this.#maxLogChars = options.maxLogChars ?? defaultMaxLogChars;
    this.#onRecorded = options.onRecorded ?? (() => {});
  }

  /** Opens history on the shared database handle and applies history's pending migrations. */
  static async open(database: SqlDatabase, options: HistoryStoreOptions = {}): Promise<HistoryStore> {
    await database.migrate([historyMigrationList], (options.now ?? (() => new Date()))());
    return new HistoryStore(database, options);
  }

  get dialect(): 'sqlite' | 'postgres' {
    return this.#backend.kind;
  }

  /** The history tables inside a BBS write transaction (they share the database, not the type). */
  write<T>(fn: (db: HistoryDb) => Promise<T>): Promise<T> {
    return this.#backend.write((tx) => fn(tx.withTables<HistoryTables>()));
  }

  read<T>(fn: (db: HistoryDb) => Promise<T>): Promise<T> {
    return this.#backend.read((tx) => fn(tx.withTables<HistoryTables>()));
  }

  async ingest(records: readonly IngestRecord[]): Promise<IngestResult> {
    if (records.length === 0) return { recorded: 0, duplicates: 0 };
    const { items, changes } = prepareIngest(records);
    // db's EventLog writes the bus events with the items and wakes event streams once committed.
    const result = await this.#database.events.write(
      this.#now,
      async (tx, at, events: ContainerStatusEvent[]) => {
        const db = tx.withTables<HistoryTables>();
        const now = at.toISOString();
        const ids = [...new Set([...items.map((i) => i.container_id), ...changes.keys()])].sort();
        // Placeholders first, then lock: two servers recording for one new container both insert,
        // one wins, and the other waits on the row lock instead of computing from a stale read.
        const current = await lockContainerRows(db, ids, (id) => placeholderRow(id, now));
        const allItems = [...items];
        for (const [id, change] of changes) {
          const row = current.get(id)!;
          const fin = change.finalization;
          // Finalized once: a re-delivered finalization must not add a second Complete/Failed.
          if (fin && row.finalized_at === null) {
            const { status, message } = finalOutcome(fin);
            allItems.push(pending(id, status, null, fin.exit_code, 'system', null, message));
          } else if (fin) {
            changes.set(id, { ...(change.launch ? { launch: change.launch } : {}) });
          }
        }
        const inserted: HistoryItem[] = [];
        const byContainer = new Map<string, HistoryItem[]>();
        for (let i = 0; i < allItems.length; i += insertChunk) {
          const rows = await db
            .insertInto('container_history')
            .values(allItems.slice(i, i + insertChunk).map((item) => ({ ...item, time_recorded: now })))
            .onConflict((oc) => oc.columns(['container_id', 'dedupe_key']).doNothing())
            .returningAll()
            .execute();
          for (const row of rows) {
            const item = toItem(row);
            inserted.push(item);
            const list = byContainer.get(row.container_id) ?? [];
            list.push(item);
            byContainer.set(row.container_id, list);
          }
        }
        const subscriptions = inserted.length > 0 ? await activeSubscriptions(db) : [];
        const deliveries: { subscription_id: string; payload: string }[] = [];
        const updates: ContainerRowUpdate[] = [];
        const keptLogs: { container_id: string; text: string }[] = [];
        for (const id of ids) {
          const row = current.get(id)!;
          const fresh = (byContainer.get(id) ?? []).sort(compareItems);
          const change = changes.get(id);
          if (fresh.length === 0 && !change?.launch && !change?.finalization) continue;
          let status: TopLevelStatus | undefined =
            row.status === '' ? undefined : { status: row.status, status_time: row.status_time };
          let newest = { time: row.newest_time, id: String(row.newest_id) };
          const first = fresh[0];
          // The container's status right after each new item, for its bus event.
          const after = new Map<HistoryItem, TopLevelStatus>();
          if (first && isNewer(first, newest)) {
            for (const item of fresh) {
              status = stepStatus(status, item);
              after.set(item, status);
            }
          } else if (first) {
            // An item older than what is recorded: the fold over the whole history is the truth.
            const all = await db
              .selectFrom('container_history')
              .select(['id', 'status', 'time_recorded', 'external_timestamp'])
              .where('container_id', '=', id)
              .execute();
            status = foldStatus(all.map((r) => ({ ...r, id: String(r.id) })));
          }
          const last = fresh.at(-1);
          if (last && isNewer(last, newest)) newest = { time: effectiveTime(last), id: last.id };
          const launch = change?.launch;
          const fin = change?.finalization;
          const logs = fin ? this.#capLogs(fin.logs) : undefined;
          const meta = { ...row, ...(launch ? launchColumns(launch) : {}) };
          updates.push({
            ...meta,
            ...(status ? { status: status.status, status_time: status.status_time } : {}),
            ...(fresh.length > 0 ? { updated_at: now } : {}),
            newest_time: newest.time,
            newest_id: newest.id,
            ...(fin && logs
              ? {
                  exit_code: fin.exit_code,
                  finalized_at: now,
                  outputs: JSON.stringify(fin.outputs),
                  logs_size: fin.logs_size,
                  logs_truncated: fin.truncated || logs.truncated ? 1 : 0,
                }
              : {}),
          });
          if (fin && logs) keptLogs.push({ container_id: id, text: logs.text });
          for (const item of fresh) {
            const event: Omit<ContainerStatusEvent, 'type'> = {
              container: {
                id,
                image: meta.image,
                cell_id: meta.cell_id,
                owner_kind: meta.owner_kind as OwnerKind,
                owner_id: meta.owner_id,
                system: meta.system,
                status: (after.get(item) ?? status)?.status ?? item.status,
                status_time: (after.get(item) ?? status)?.status_time ?? item.time_recorded,
              },
              item,
            };
            events.push({ type: containerEventType, ...event });
            for (const sub of subscriptions) {
              if (sub.statuses.size === 0 || sub.statuses.has(item.status)) {
                deliveries.push({
                  subscription_id: sub.id,
                  payload: JSON.stringify({ type: containerEventType, subscription_id: sub.id, ...event }),
                });
              }
            }
          }
        }
        await writeContainerRows(db, this.#backend.kind, updates);
        await writeContainerLogs(db, keptLogs);
        for (let i = 0; i < deliveries.length; i += insertChunk) {
          await db
            .insertInto('subscription_deliveries')
            .values(
              deliveries.slice(i, i + insertChunk).map((d) => ({
                ...d,
                state: 'pending',
                attempts: 0,
                next_attempt_at: now,
                last_status: null,
                last_error: null,
                created_at: now,
                updated_at: now,
              })),
            )
            .execute();
        }
        return { recorded: inserted.length, duplicates: allItems.length - inserted.length };
      },
    );
    if (result.recorded > 0) this.#onRecorded();
    return result;
  }

  async getContainer(id: string): Promise<ContainerWithHistory> {
    return this.read(async (db) => {
      const row = await db.selectFrom('containers').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row) throw new NotFoundError('container', id);
      const items = await db
        .selectFrom('container_history')
        .selectAll()
        .where('container_id', '=', id)
        .execute();
      return { ...toRecord(row), history: items.map(toItem).sort(compareItems) };
    });
  }

  async listContainers(req: ListContainersRequest = {}): Promise<ContainerPage> {
    const limit = Math.min(Math.max(1, req.limit ?? 100), maxPage);
    const cursor = req.cursor === undefined ? undefined : parseCursor(req.cursor);
    const since = req.since === undefined ? undefined : canonicalTimestamp(req.since);
    if (req.since !== undefined && since === undefined) {
      throw new InvalidArgumentError(`Invalid since "${req.since}": expected an ISO-8601 time`, {
        field: 'since',
      });
    }
    return this.read(async (db) => {
      let query = db.selectFrom('containers').selectAll().where('status', '!=', '');
      if (req.status !== undefined) query = query.where('status', '=', req.status);
      if (req.system !== undefined) query = query.where('system', '=', req.system);
      if (since !== undefined) query = query.where('updated_at', '>=', since);
      if (cursor !== undefined) query = query.where('seq', '<', cursor);
      const rows = await query
        .orderBy('seq', 'desc')
        .limit(limit + 1)
        .execute();
      const page = rows.slice(0, limit);
      const more = rows.length > limit;
      return {
        containers: page.map(toRecord),
        ...(more ? { next_cursor: String(page.at(-1)!.seq) } : {}),
      };
    });
  }

  async getLogs(id: string): Promise<ContainerLogs> {
    return this.read(async (db) => {
      const row = await db
        .selectFrom('containers')
        .leftJoin('container_logs', 'container_logs.container_id', 'containers.id')
        .select(['containers.id', 'containers.logs_size', 'containers.logs_truncated', 'container_logs.text'])
        .where('containers.id', '=', id)
        .executeTakeFirst();
      if (!row) throw new NotFoundError('container', id);
      return {
        container_id: id,
        text: row.text ?? '',
        size: Number(row.logs_size),
        truncated: Number(row.logs_truncated) === 1,
      };
    });
  }

  #capLogs(text: string): { text: string; truncated: boolean } {
    if (text.length <= this.#maxLogChars) return { text, truncated: false };
    return { text: text.slice(text.length - this.#maxLogChars), truncated: true };
  }
}

function isNewer(item: HistoryItem, newest: { time: string; id: string }): boolean {
  const time = effectiveTime(item);
  if (time !== newest.time) return time > newest.time;
  return compareIds(item.id, newest.id) > 0;
}

function placeholderRow(id: string, now: string): Insertable<ContainerRow> {
  return {
    id,
    image: '',
    command: '[]',
    env_names: '[]',
    cell_id: '',
    owner_kind: 'direct',
    owner_id: '',
    system: null,
    status: '',
    status_time: now,
    created_at: now,
    updated_at: now,
    newest_time: '',
    newest_id: 0,
    exit_code: null,
    finalized_at: null,
    outputs: '[]',
    logs_size: 0,
    logs_truncated: 0,
  };
}

function launchColumns(launch: ContainerLaunch) {
  return {
    image: launch.image,
    command: JSON.stringify(launch.command),
    env_names: JSON.stringify(launch.env_names),
    cell_id: launch.cell_id,
    owner_kind: launch.owner_kind,
    owner_id: launch.owner_id,
    system: launch.system,
  };
}

async function activeSubscriptions(db: HistoryDb): Promise<{ id: string; statuses: ReadonlySet<string> }[]> {
  const rows = await db
    .selectFrom('subscriptions')
    .select(['id', 'statuses'])
    .where('removed_at', 'is', null)
    .execute();
  return rows.map((r) => ({ id: r.id, statuses: new Set(JSON.parse(r.statuses) as string[]) }));
}

function toItem(
  row: Pick<
    HistoryRow,
    'status' | 'time_recorded' | 'external_timestamp' | 'exit_code' | 'entity_type' | 'entity_id' | 'message'
  > & { id: number | string },
): HistoryItem {
  return {
    id: String(row.id),
    status: row.status,
    time_recorded: row.time_recorded,
    external_timestamp: row.external_timestamp,
    exit_code: row.exit_code === null ? null : Number(row.exit_code),
    entity_type: row.entity_type as EntityType,
    entity_id: row.entity_id,
    message: row.message,
  };
}

function toRecord(row: Selectable<ContainerRow>): ContainerRecord {
  return {
    id: row.id,
    image: row.image,
    command: JSON.parse(row.command) as string[],
    env_names: JSON.parse(row.env_names) as string[],
    cell_id: row.cell_id,
    owner_kind: row.owner_kind as OwnerKind,
    owner_id: row.owner_id,
    system: row.system,
    status: row.status,
    status_time: row.status_time,
    created_at: row.created_at,
    updated_at: row.updated_at,
    exit_code: row.exit_code === null ? null : Number(row.exit_code),
    finalized_at: row.finalized_at,
    outputs: JSON.parse(row.outputs) as ContainerOutput[],
    logs_size: Number(row.logs_size),
    logs_truncated: Number(row.logs_truncated) === 1,
  };
}

function parseCursor(cursor: string): number {
  if (!/^\d+$/.test(cursor))
    throw new InvalidArgumentError(
      `Invalid cursor "${cursor}": expected the next_cursor of a previous page`,
      { field: 'cursor' },
    );
  return Number(cursor);
}
