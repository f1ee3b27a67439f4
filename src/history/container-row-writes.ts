import type { Insertable, Selectable } from 'kysely';
import { type SqlBackend, type ValuesUpdate, valuesUpdate } from '../db/index.js';
import type { ContainerRow, HistoryDb } from './history-database.js';

/**
 * The container rows of one ingest, read and written a chunk at a time rather than a row at a
 * time: on PostgreSQL every statement is a round trip during which the transaction holds a pool
 * connection, and a cell's report of a hundred containers had cost a hundred and six of them.
 */

/** Rows per statement: far below SQLite's and PostgreSQL's bound-parameter limits. */
const rowsPerStatement = 200;

/**
 * Makes sure a row exists for each id (a placeholder for one never seen) and returns every row
 * as it is now, locked for the rest of the transaction on PostgreSQL. One statement per chunk:
 * the insert's conflict arm rewrites the id to itself, which takes the row lock and makes
 * RETURNING hand back the existing row. `ids` are sorted, so two ingests lock in one order.
 */
export async function lockContainerRows(
  db: HistoryDb,
  ids: readonly string[],
  placeholder: (id: string) => Insertable<ContainerRow>,
): Promise<Map<string, Selectable<ContainerRow>>> {
  const rows = new Map<string, Selectable<ContainerRow>>();
  for (let i = 0; i < ids.length; i += rowsPerStatement) {
    const returned = await db
      .insertInto('containers')
      .values(ids.slice(i, i + rowsPerStatement).map(placeholder))
      .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ id: eb.ref('excluded.id') })))
      .returningAll()
      .execute();
    for (const row of returned) rows.set(row.id, row);
  }
  return rows;
}

/** The columns an ingest may change. */
const setColumns = [
  'image',
  'command',
  'env_names',
  'cell_id',
  'owner_kind',
  'owner_id',
  'system',
  'status',
  'status_time',
  'updated_at',
  'newest_time',
  'newest_id',
  'exit_code',
  'finalized_at',
  'outputs',
  'logs_size',
  'logs_truncated',
] as const satisfies readonly (keyof ContainerRow)[];

const containersUpdate: ValuesUpdate = {
  table: 'containers',
  columns: ['id', ...setColumns],
  types: { newest_id: 'bigint', exit_code: 'integer', logs_size: 'integer', logs_truncated: 'integer' },
  set: setColumns,
  match: [['id', 'id']],
};

/** A container row as it becomes: its id and every column an ingest may change. */
export type ContainerRowUpdate = Pick<Selectable<ContainerRow>, 'id' | (typeof setColumns)[number]>;

/** Writes each row's changeable columns, one UPDATE per chunk. Every id must have a row. */
export async function writeContainerRows(
  db: HistoryDb,
  kind: SqlBackend['kind'],
  rows: readonly ContainerRowUpdate[],
): Promise<void> {
  for (let at = 0; at < rows.length; at += rowsPerStatement) {
    await db.executeQuery(valuesUpdate(kind, containersUpdate, rows.slice(at, at + rowsPerStatement)));
  }
}

/** Every container's kept logs, one upsert per chunk. */
export async function writeContainerLogs(
  db: HistoryDb,
  logs: readonly { readonly container_id: string; readonly text: string }[],
): Promise<void> {
  for (let at = 0; at < logs.length; at += rowsPerStatement) {
    await db
      .insertInto('container_logs')
      .values(logs.slice(at, at + rowsPerStatement))
      .onConflict((oc) => oc.column('container_id').doUpdateSet((eb) => ({ text: eb.ref('excluded.text') })))
      .execute();
  }
}
