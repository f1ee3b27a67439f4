import { open } from 'node:fs/promises';
import type { Kysely } from 'kysely';
import { BerthError, NotFoundError } from '../../core/index.js';
import type { MigrationList, SqlDatabase, SqlDialectKind } from '../../db/index.js';
import type { TaskOutputsInfo } from '../task-output-types.js';
import type { BbsDatabase } from './bbs-database.js';
import { rowToTask } from './row-mapping.js';

/** Archives are stored in rows of this many bytes: no row, and no read of one, holds a whole archive. */
export const taskOutputChunkBytes = 1024 * 1024;

type TaskOutputTables = {
  task_outputs: {
    task_guid: string;
    task_epoch: string;
    cell_id: string;
    size: number;
    sha256: string;
    created_at: string;
  };
  task_output_chunks: { task_guid: string; seq: number; data: Buffer };
};

const blobType: Readonly<Record<SqlDialectKind, string>> = { sqlite: 'BLOB', postgres: 'BYTEA' };

function outputSchema(kind: SqlDialectKind): string[] {
  return [
    `CREATE TABLE task_outputs (
      task_guid TEXT PRIMARY KEY, task_epoch TEXT NOT NULL, cell_id TEXT NOT NULL, size BIGINT NOT NULL,
      sha256 TEXT NOT NULL, created_at TEXT NOT NULL)`,
    `CREATE TABLE task_output_chunks (
      task_guid TEXT NOT NULL, seq INTEGER NOT NULL, data ${blobType[kind]} NOT NULL,
      PRIMARY KEY (task_guid, seq))`,
  ];
}

/**
 * The tables of task outputs: their own ledger, so their versions never meet the BBS's or another
 * list's. Applied with the BBS's migrations (SqlBbsStore.open): deleting a task deletes its
 * archive in the same transaction, so the tables exist wherever tasks do.
 */
export const taskOutputMigrationList: MigrationList = {
  owner: 'task-outputs',
  ledger: 'task_outputs_schema_migrations',
  migrations: [
    {
      version: 1,
      name: 'task output archives',
      statements: { sqlite: outputSchema('sqlite'), postgres: outputSchema('postgres') },
    },
  ],
};

/** Deletes a task's archive: called inside the transaction that deletes the task. */
export async function deleteTaskOutputs(db: Kysely<BbsDatabase>, taskGuid: string): Promise<void> {
  const tables = db.withTables<TaskOutputTables>();
  await tables.deleteFrom('task_output_chunks').where('task_guid', '=', taskGuid).execute();
  await tables.deleteFrom('task_outputs').where('task_guid', '=', taskGuid).execute();
}

export interface StoreTaskOutputsRequest {
  readonly task_guid: string;
  readonly cell_id: string;
  /** The archive, on the server's disk already (the route spooled the upload there and checked its digest). */
  readonly file: string;
  readonly size: number;
  readonly sha256: string;
}

/**
 * Task output archives on the BBS's database (SQLite or PostgreSQL alike), in 1 MiB rows. A cell
 * stores its task's archive while the task is RUNNING on it (the same check completeTask makes),
 * so an archive never outlives its task nor lands on a task someone else runs; a second upload
 * (the rep retrying after a lost answer) replaces the first.
 */
export class TaskOutputStore {
  readonly #database: SqlDatabase;
  readonly #now: () => Date;

  constructor(database: SqlDatabase, now: () => Date = () => new Date()) {
    this.#database = database;
    this.#now = now;
  }

  async store(req: StoreTaskOutputsRequest): Promise<TaskOutputsInfo> {
    const backend = this.#database.backend;
    return backend.write(async (tx) => {
      const db = tx.withTables<BbsDatabase>();
      let query = db.selectFrom('tasks').selectAll().where('task_guid', '=', req.task_guid);
      if (backend.lockRows) query = query.forUpdate();
      const row = await query.executeTakeFirst();
      if (!row) throw new NotFoundError('Task', req.task_guid);
      const task = rowToTask(row);
      if (task.state !== 'RUNNING' || task.cell_id !== req.cell_id) {
        throw new BerthError(
          'conflict',
          `Cannot store the outputs of task "${req.task_guid}" from cell "${req.cell_id}": the task is ${task.state}${task.cell_id ? ` on cell "${task.cell_id}"` : ''}, not RUNNING on that cell`,
          { kind: 'Task', id: req.task_guid, current: task },
        );
      }
      const tables = tx.withTables<TaskOutputTables>();
      await deleteTaskOutputs(db, req.task_guid);
      const info: TaskOutputsInfo = {
        task_guid: req.task_guid,
        size: req.size,
        sha256: req.sha256,
        cell_id: req.cell_id,
        created_at: this.#now().toISOString(),
      };
      await tables
        .insertInto('task_outputs')
        .values({ ...info, task_epoch: task.modification_tag.epoch })
        .execute();
      let seq = 0;
      for await (const data of chunksOf(req.file)) {
        await tables
          .insertInto('task_output_chunks')
          .values({ task_guid: req.task_guid, seq, data })
          .execute();
        seq += 1;
      }
      return info;
    });
  }

  /** The archive's facts, or not_found when the task has none (none declared, none yet, deleted). */
  async info(taskGuid: string): Promise<TaskOutputsInfo> {
    const row = await this.#database.backend.db
      .withTables<TaskOutputTables>()
      .selectFrom('task_outputs')
      .select(['task_guid', 'size', 'sha256', 'cell_id', 'created_at'])
      .where('task_guid', '=', taskGuid)
      .executeTakeFirst();
    if (!row) throw new NotFoundError('Task outputs', taskGuid);
    return { ...row, size: Number(row.size) };
  }

  /**
   * The archive's bytes, one stored row at a time. A task deleted while its archive is read ends
   * the read early; the reader's digest check (the CLI's) then fails instead of unpacking half.
   */
  async *read(taskGuid: string): AsyncGenerator<Buffer> {
    const tables = this.#database.backend.db.withTables<TaskOutputTables>();
    for (let seq = 0; ; seq++) {
      const row = await tables
        .selectFrom('task_output_chunks')
        .select('data')
        .where('task_guid', '=', taskGuid)
        .where('seq', '=', seq)
        .executeTakeFirst();
      if (!row) return;
      yield Buffer.from(row.data);
    }
  }
}

async function* chunksOf(file: string): AsyncGenerator<Buffer> {
  const handle = await open(file, 'r');
  try {
    for (;;) {
      const buffer = Buffer.alloc(taskOutputChunkBytes);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) return;
      yield bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
    }
  } finally {
    await handle.close();
  }
}
