import type { Generated, Kysely } from 'kysely';
import type { BbsStore } from './bbs-store.js';
import type { Task } from './bbs-types.js';
import type { BbsDatabase } from './sql/bbs-database.js';
import { SqlBbsStore } from './sql/sql-bbs-store.js';

/**
 * What became of one completion-callback POST (DESIGN.md "cluster", Tasks):
 * - `delivered`: 2xx, the task was deleted;
 * - `rejected`: any other 4xx (or 3xx, or a URL that cannot be POSTed to), the task was deleted;
 * - `retrying`: 5xx, 408, 429, a timeout or a connection error, the task went back to COMPLETED
 *   and is retried after a back-off;
 * - `exhausted`: the same on the last allowed attempt: the task stays COMPLETED and marked (this
 *   row is the mark) until the converger's completed-task TTL deletes it.
 */
export type TaskDeliveryOutcome = 'delivered' | 'rejected' | 'retrying' | 'exhausted';

export const taskDeliveryOutcomes: readonly TaskDeliveryOutcome[] = [
  'delivered',
  'rejected',
  'retrying',
  'exhausted',
];

/** One attempt as the API shows it in `GET /v1/tasks/{task_guid}` → `deliveries`. */
export interface TaskDelivery {
  /** 1 for the first POST. */
  readonly attempt: number;
  /** ISO-8601: when the POST started. */
  readonly at: string;
  /** The HTTP status, when the callback answered. */
  readonly status_code?: number;
  /** Why there is no status: refused, reset, timed out, invalid URL. */
  readonly error?: string;
  readonly outcome: TaskDeliveryOutcome;
  readonly duration_ms: number;
}

/** A row of the log: the attempt plus the task record (guid and epoch) and URL it belongs to. */
export interface TaskDeliveryRecord extends TaskDelivery {
  readonly task_guid: string;
  /** The task record's modification_tag.epoch: a re-desired guid has a fresh, empty log. */
  readonly task_epoch: string;
  readonly url: string;
}

export interface TaskDeliveryLog {
  /** Appends one attempt; a second row for the same (task, epoch, attempt) is refused. */
  record(entry: TaskDeliveryRecord): Promise<void>;
  /** Attempts in order; with `task_epoch` only those of that task record. */
  list(req: { readonly task_guid: string; readonly task_epoch?: string }): Promise<TaskDeliveryRecord[]>;
  /**
   * Attempts of every COMPLETED task's current record, per task_guid (the worker's one read per
   * pass). Tasks without any attempt are absent.
   */
  listForCompletedTasks(): Promise<Map<string, TaskDeliveryRecord[]>>;
  /** Deletes attempts older than `before` whose task record is gone; returns how many. */
  prune(req: { readonly before: string }): Promise<number>;
}

/** The API's view of a log row. */
export function toTaskDelivery(record: TaskDeliveryRecord): TaskDelivery {
  return {
    attempt: record.attempt,
    at: record.at,
    ...(record.status_code !== undefined ? { status_code: record.status_code } : {}),
    ...(record.error !== undefined ? { error: record.error } : {}),
    outcome: record.outcome,
    duration_ms: record.duration_ms,
  };
}

/** The delivery log of the task a record belongs to (its guid and its current epoch). */
export function deliveriesOf(task: Task, records: readonly TaskDeliveryRecord[]): TaskDeliveryRecord[] {
  return records.filter(
    (r) => r.task_guid === task.task_guid && r.task_epoch === task.modification_tag.epoch,
  );
}

type DeliveryTables = {
  task_deliveries: {
    id: Generated<number | string>;
    task_guid: string;
    task_epoch: string;
    attempt: number;
    at: string;
    url: string;
    status_code: number | null;
    error: string | null;
    outcome: string;
    duration_ms: number;
  };
};
type DeliveryDb = Kysely<BbsDatabase & DeliveryTables>;
type DeliveryRow = DeliveryTables['task_deliveries'];

/**
 * The log in the BBS database (migration 3), beside the tasks it describes. It is not part of
 * BbsStore: only the server that owns the database writes it (the callback worker singleton) and
 * reads it (the public task routes), so reps and the HTTP client never need it.
 */
export class SqlTaskDeliveryLog implements TaskDeliveryLog {
  readonly #backend: SqlBbsStore['backend'];

  constructor(store: SqlBbsStore) {
    this.#backend = store.backend;
  }

  get #db(): DeliveryDb {
    return this.#backend.db.withTables<BbsDatabase & DeliveryTables>();
  }

  async record(entry: TaskDeliveryRecord): Promise<void> {
    await this.#backend.write(async (tx) => {
      await tx
        .withTables<BbsDatabase & DeliveryTables>()
        .insertInto('task_deliveries')
        .values({
          task_guid: entry.task_guid,
          task_epoch: entry.task_epoch,
          attempt: entry.attempt,
          at: entry.at,
          url: entry.url,
          status_code: entry.status_code ?? null,
          error: entry.error ?? null,
          outcome: entry.outcome,
          duration_ms: Math.round(entry.duration_ms),
        })
        .execute();
    });
  }

  async list(req: {
    readonly task_guid: string;
    readonly task_epoch?: string;
  }): Promise<TaskDeliveryRecord[]> {
    let query = this.#db
      .selectFrom('task_deliveries')
      .selectAll()
      .where('task_guid', '=', req.task_guid)
      .orderBy('id');
    if (req.task_epoch !== undefined) query = query.where('task_epoch', '=', req.task_epoch);
    return (await query.execute()).map(rowToRecord);
  }

  async listForCompletedTasks(): Promise<Map<string, TaskDeliveryRecord[]>> {
    const rows = await this.#db
      .selectFrom('task_deliveries as d')
      .innerJoin('tasks as t', (join) =>
        join.onRef('t.task_guid', '=', 'd.task_guid').onRef('t.tag_epoch', '=', 'd.task_epoch'),
      )
      .selectAll('d')
      .where('t.state', '=', 'COMPLETED')
      .orderBy('d.id')
      .execute();
    const byTask = new Map<string, TaskDeliveryRecord[]>();
    for (const row of rows) {
      const record = rowToRecord(row);
      const list = byTask.get(record.task_guid);
      if (list) list.push(record);
      else byTask.set(record.task_guid, [record]);
    }
    return byTask;
  }

  async prune(req: { readonly before: string }): Promise<number> {
    return this.#backend.write(async (tx) => {
      const db = tx.withTables<BbsDatabase & DeliveryTables>();
      const result = await db
        .deleteFrom('task_deliveries')
        .where('at', '<', req.before)
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom('tasks')
                .select('tasks.task_guid')
                .whereRef('tasks.task_guid', '=', 'task_deliveries.task_guid')
                .whereRef('tasks.tag_epoch', '=', 'task_deliveries.task_epoch'),
            ),
          ),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}

/**
 * The log of a store that has one: the SQL store (the server's own database). A BbsClient has
 * none; routes built on it simply show no `deliveries`.
 */
export function taskDeliveryLogFor(store: BbsStore): TaskDeliveryLog | undefined {
  return store instanceof SqlBbsStore ? new SqlTaskDeliveryLog(store) : undefined;
}

function rowToRecord(row: DeliveryRow | Omit<DeliveryRow, 'id'>): TaskDeliveryRecord {
  const outcome = row.outcome as TaskDeliveryOutcome;
  return {
    task_guid: row.task_guid,
    task_epoch: row.task_epoch,
    url: row.url,
    attempt: Number(row.attempt),
    at: row.at,
    ...(row.status_code !== null ? { status_code: Number(row.status_code) } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
    outcome,
    duration_ms: Number(row.duration_ms),
  };
}
