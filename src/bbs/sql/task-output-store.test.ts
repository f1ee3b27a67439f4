import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../../testing/postgres-harness.js';
import type { Task } from '../bbs-types.js';
import { openBbsStore } from '../open-bbs-store.js';
import type { SqlBbsStore } from './sql-bbs-store.js';
import { taskOutputChunkBytes } from './task-output-store.js';

/**
 * Task output archives on both real backends: stored only for a task RUNNING on the storing cell,
 * read back byte for byte across several 1 MiB rows, replaced by a second upload, and deleted in
 * the transaction that deletes the task.
 */
function describeTaskOutputStore(
  name: string,
  open: () => Promise<{ store: SqlBbsStore; close: () => Promise<void> }>,
  skip?: string,
): void {
  describe(`TaskOutputStore on ${name}`, { skip: skip ?? false }, () => {
    let store: SqlBbsStore;
    let close: () => Promise<void>;
    const dir = mkdtempSync(join(tmpdir(), 'berth-task-output-store-'));
    before(async () => {
      ({ store, close } = await open());
    });
    after(async () => {
      await close?.();
      rmSync(dir, { recursive: true, force: true });
    });

    let n = 0;
    function archive(size: number): { file: string; size: number; sha256: string; bytes: Buffer } {
      const bytes = randomBytes(size);
      const file = join(dir, `a${n++}`);
      writeFileSync(file, bytes);
      return { file, size, sha256: createHash('sha256').update(bytes).digest('hex'), bytes };
    }

    async function runningTask(guid: string): Promise<Task> {
      const task = await store.desireTask({
        task_guid: guid,
        domain: 'd',
        image: 'busybox',
        env: {},
        memory_mb: 0,
        disk_mb: 0,
        result_file: '',
        completion_callback_url: '',
        placement_tags: [],
        outputs: [{ name: 'out', path: '/out' }],
      });
      assert.deepEqual(task.outputs, [{ name: 'out', path: '/out' }], 'the declaration is stored');
      return store.startTask({ task_guid: guid, expected: task.modification_tag, cell_id: 'cell-a' });
    }

    async function readAll(guid: string): Promise<Buffer> {
      const chunks: Buffer[] = [];
      for await (const chunk of store.taskOutputs.read(guid)) chunks.push(chunk);
      return Buffer.concat(chunks);
    }

    it('keeps an archive of a task RUNNING on the storing cell, byte-equal across rows; a retry replaces it', async () => {
      await runningTask('t1');
      const first = archive(2 * taskOutputChunkBytes + 12345);
      const info = await store.taskOutputs.store({ task_guid: 't1', cell_id: 'cell-a', ...first });
      assert.equal(info.size, first.size);
      assert.equal(info.sha256, first.sha256);
      assert.deepEqual(await store.taskOutputs.info('t1'), info);
      assert.ok((await readAll('t1')).equals(first.bytes));
      const second = archive(100);
      await store.taskOutputs.store({ task_guid: 't1', cell_id: 'cell-a', ...second });
      assert.ok((await readAll('t1')).equals(second.bytes), 'no row of the first archive is left');
      assert.equal((await store.taskOutputs.info('t1')).size, 100);
    });

    it('refuses another cell, a task that is not RUNNING, and a task that does not exist', async () => {
      const running = await runningTask('t2');
      const a = archive(10);
      await assert.rejects(store.taskOutputs.store({ task_guid: 't2', cell_id: 'cell-b', ...a }), {
        code: 'conflict',
        message: /task is RUNNING on cell "cell-a", not RUNNING on that cell/,
      });
      await store.completeTask({
        task_guid: 't2',
        expected: running.modification_tag,
        cell_id: 'cell-a',
        failed: false,
        failure_reason: '',
        result: '',
      });
      await assert.rejects(store.taskOutputs.store({ task_guid: 't2', cell_id: 'cell-a', ...a }), {
        code: 'conflict',
        message: /the task is COMPLETED/,
      });
      await assert.rejects(store.taskOutputs.store({ task_guid: 'none', cell_id: 'cell-a', ...a }), {
        code: 'not_found',
      });
      await assert.rejects(store.taskOutputs.info('t2'), { code: 'not_found' });
    });

    it('deleting the task deletes its archive', async () => {
      const running = await runningTask('t3');
      await store.taskOutputs.store({
        task_guid: 't3',
        cell_id: 'cell-a',
        ...archive(taskOutputChunkBytes + 1),
      });
      const done = await store.completeTask({
        task_guid: 't3',
        expected: running.modification_tag,
        cell_id: 'cell-a',
        failed: false,
        failure_reason: '',
        result: '',
      });
      const resolving = await store.resolvingTask({ task_guid: 't3', expected: done.modification_tag });
      assert.equal((await store.taskOutputs.info('t3')).task_guid, 't3', 'kept until the task goes');
      await store.deleteTask({ task_guid: 't3', expected: resolving.modification_tag });
      await assert.rejects(store.taskOutputs.info('t3'), { code: 'not_found' });
      assert.equal((await readAll('t3')).length, 0, 'its rows are gone too');
    });

    it('refuses bad declarations whatever the caller (duplicate names, relative or .. paths)', async () => {
      const base = {
        domain: 'd',
        image: 'busybox',
        env: {},
        memory_mb: 0,
        disk_mb: 0,
        result_file: '',
        completion_callback_url: '',
        placement_tags: [],
      };
      for (const [outputs, message] of [
        [
          [
            { name: 'a', path: '/x' },
            { name: 'a', path: '/y' },
          ],
          /declared twice/,
        ],
        [[{ name: 'a', path: 'x' }], /expected an absolute path without "\.\."/],
        [[{ name: 'a', path: '/x/../etc' }], /expected an absolute path without "\.\."/],
        [[{ name: '../a', path: '/x' }], /Invalid output name/],
        [[{ name: 'a', path: '//.' }], /the container's whole root is no output/],
      ] as const) {
        await assert.rejects(store.desireTask({ ...base, task_guid: `bad-${n++}`, outputs }), {
          code: 'invalid_argument',
          message,
        });
      }
      await assert.rejects(
        store.desireTask({ ...base, task_guid: 'bad-max', outputs_max_bytes: 1024 ** 3 }),
        /outputs_max_bytes must be an integer from 1 to 268435456/,
      );
    });
  });
}

describeTaskOutputStore('SQLite', async () => {
  const store = await openBbsStore(':memory:');
  return { store, close: () => store.close() };
});

let postgres: PostgresServer | undefined;
describeTaskOutputStore(
  'PostgreSQL',
  async () => {
    postgres = await startPostgres('task_outputs');
    const store = await openBbsStore(postgres.url);
    return {
      store,
      close: async () => {
        await store.close();
        await postgres?.stop();
      },
    };
  },
  postgresSkipReason(),
);
