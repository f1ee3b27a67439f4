import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import type { Task } from './bbs-types.js';
import { openBbsStore } from './open-bbs-store.js';
import type { SqlBbsStore } from './sql/sql-bbs-store.js';
import { SqlTaskDeliveryLog } from './task-callback-log.js';
import {
  callbackBackoffMs,
  classifyCallbackStatus,
  type TaskCallbackConfig,
  TaskCallbackWorker,
} from './task-callback-worker.js';

describe('classifyCallbackStatus (DESIGN.md: which answers are retried)', () => {
  const table: ReadonlyArray<readonly [number, string]> = [
    [200, 'delivered'],
    [201, 'delivered'],
    [204, 'delivered'],
    [500, 'retry'],
    [502, 'retry'],
    [503, 'retry'],
    [408, 'retry'],
    [429, 'retry'],
    [400, 'rejected'],
    [401, 'rejected'],
    [404, 'rejected'],
    [410, 'rejected'],
    [301, 'rejected'],
  ];
  for (const [status, expected] of table) {
    it(`${status} → ${expected}`, () => assert.equal(classifyCallbackStatus(status), expected));
  }
});

describe('callbackBackoffMs', () => {
  it('doubles from the base and stops at the max', () => {
    const config = { backoffBaseMs: 1000, backoffMaxMs: 5000 };
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((n) => callbackBackoffMs(n, config)),
      [1000, 2000, 4000, 5000, 5000],
    );
  });
});

/** A callback receiver that answers from a script (a status, or "hang" to never answer). */
interface Receiver {
  readonly url: string;
  readonly port: number;
  readonly requests: { body: Task; attempt: string | undefined; guid: string | undefined }[];
  script: (string | number)[];
  close(): Promise<void>;
}

async function startReceiver(script: (string | number)[], port = 0): Promise<Receiver> {
  const requests: Receiver['requests'] = [];
  const hanging: ServerResponse[] = [];
  const receiver = { requests, script } as Receiver;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (c: Buffer) => {
      text += c.toString();
    });
    req.on('end', () => {
      requests.push({
        body: JSON.parse(text) as Task,
        attempt: req.headers['x-berth-delivery-attempt'] as string | undefined,
        guid: req.headers['x-berth-task-guid'] as string | undefined,
      });
      const next = receiver.script.shift() ?? 200;
      if (next === 'hang') {
        hanging.push(res);
        return;
      }
      res.writeHead(Number(next), { 'content-type': 'text/plain' }).end('answer');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actual = (server.address() as AddressInfo).port;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${actual}/done`,
    port: actual,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** A loopback port nobody listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const backends: ReadonlyArray<{
  name: string;
  skip?: string | undefined;
  open: () => Promise<{ store: SqlBbsStore; close(): Promise<void> }>;
}> = [
  {
    name: 'SQLite',
    open: async () => {
      const store = await openBbsStore(':memory:');
      return { store, close: () => store.close() };
    },
  },
  {
    name: 'PostgreSQL',
    skip: postgresSkipReason(),
    open: async () => {
      const pg: PostgresServer = await startPostgres();
      const store = await openBbsStore(pg.url);
      return {
        store,
        close: async () => {
          await store.close();
          await pg.stop();
        },
      };
    },
  },
];

for (const backend of backends) {
  describe(`task completion callbacks: ${backend.name}`, { skip: backend.skip ?? false }, () => {
    let target: { store: SqlBbsStore; close(): Promise<void> };
    let store: SqlBbsStore;
    let log: SqlTaskDeliveryLog;
    before(async () => {
      target = await backend.open();
      store = target.store;
      log = new SqlTaskDeliveryLog(store);
    });
    after(async () => {
      await target?.close();
    });

    // The worker's clock is moved by hand: back-off is checked without sleeping.
    const clock = { ms: Date.now() };
    const config: Partial<TaskCallbackConfig> = {
      maxAttempts: 3,
      backoffBaseMs: 1000,
      backoffMaxMs: 4000,
      // Long enough that a loopback answer under a loaded CI machine never counts as a timeout
      // (300 ms once did); only the 'hang' receiver below waits it out.
      timeoutMs: 2000,
      // The receivers here listen on 127.0.0.1, which the server refuses unless allowed.
      allowPrivateTargets: true,
    };
    const worker = () => new TaskCallbackWorker({ store, log, config, now: () => clock.ms });

    /** Desires a task with a callback and completes it as a cell would (start, then complete). */
    async function completedTask(url: string, failed = false): Promise<Task> {
      const guid = `task-${randomUUID().slice(0, 8)}`;
      const pending = await store.desireTask({
        task_guid: guid,
        domain: 'test',
        image: 'busybox',
        command: ['sh', '-c', 'echo hi > /out'],
        env: {},
        memory_mb: 16,
        disk_mb: 0,
        result_file: '/out',
        completion_callback_url: url,
        placement_tags: [],
      });
      const running = await store.startTask({
        task_guid: guid,
        expected: pending.modification_tag,
        cell_id: 'cell-1',
      });
      return store.completeTask({
        task_guid: guid,
        expected: running.modification_tag,
        cell_id: 'cell-1',
        failed,
        failure_reason: failed ? 'exit status 3' : '',
        result: failed ? '' : 'hi\n',
      });
    }

    const exists = async (guid: string) => (await store.listTasks()).some((t) => t.task_guid === guid);

    it('500 twice then 200: three deliveries logged, then the task is gone', async () => {
      const receiver = await startReceiver([500, 500, 200]);
      try {
        const task = await completedTask(receiver.url);
        const w = worker();

        assert.equal((await w.pass()).attempted, 1);
        let current = await store.getTask({ task_guid: task.task_guid });
        assert.equal(current.state, 'COMPLETED', 'a retryable failure hands the task back');
        assert.equal((await w.pass()).attempted, 0, 'not before its back-off');

        clock.ms += callbackBackoffMs(1, config as TaskCallbackConfig) + 1000;
        assert.equal((await w.pass()).attempted, 1);
        current = await store.getTask({ task_guid: task.task_guid });
        const midway = await log.list({
          task_guid: task.task_guid,
          task_epoch: current.modification_tag.epoch,
        });
        assert.deepEqual(
          midway.map((d) => [d.attempt, d.status_code, d.outcome]),
          [
            [1, 500, 'retrying'],
            [2, 500, 'retrying'],
          ],
        );

        clock.ms += callbackBackoffMs(2, config as TaskCallbackConfig) + 1000;
        assert.equal((await w.pass()).attempted, 1);
        assert.equal(await exists(task.task_guid), false, 'a 2xx deletes the task');

        const logged = await log.list({ task_guid: task.task_guid });
        assert.deepEqual(
          logged.map((d) => [d.attempt, d.status_code, d.outcome]),
          [
            [1, 500, 'retrying'],
            [2, 500, 'retrying'],
            [3, 200, 'delivered'],
          ],
        );
        assert.equal(receiver.requests.length, 3);
        assert.deepEqual(
          receiver.requests.map((r) => r.attempt),
          ['1', '2', '3'],
        );
        const body = receiver.requests[2]?.body;
        assert.equal(body?.task_guid, task.task_guid);
        assert.equal(body?.state, 'COMPLETED');
        assert.equal(body?.result, 'hi\n');
        assert.equal(body?.failed, false);
      } finally {
        await receiver.close();
      }
    });

    it('404: deleted at once, the delivery marked rejected', async () => {
      const receiver = await startReceiver([404]);
      try {
        const task = await completedTask(receiver.url, true);
        await worker().pass();
        assert.equal(await exists(task.task_guid), false);
        const logged = await log.list({ task_guid: task.task_guid });
        assert.deepEqual(
          logged.map((d) => [d.attempt, d.status_code, d.outcome]),
          [[1, 404, 'rejected']],
        );
        assert.equal(receiver.requests[0]?.body.failure_reason, 'exit status 3');
      } finally {
        await receiver.close();
      }
    });

    it('a refused connection is retried, and delivered once the receiver is up', async () => {
      const port = await closedPort();
      const task = await completedTask(`http://127.0.0.1:${port}/cb`);
      const w = worker();
      await w.pass();
      const first = await log.list({ task_guid: task.task_guid });
      assert.equal(first.length, 1);
      assert.equal(first[0]?.outcome, 'retrying');
      assert.match(first[0]?.error ?? '', /ECONNREFUSED/);
      assert.equal(first[0]?.status_code, undefined);
      assert.equal((await store.getTask({ task_guid: task.task_guid })).state, 'COMPLETED');

      const receiver = await startReceiver([200], port);
      try {
        clock.ms += 60_000;
        await w.pass();
        assert.equal(await exists(task.task_guid), false);
        assert.deepEqual(
          (await log.list({ task_guid: task.task_guid })).map((d) => d.outcome),
          ['retrying', 'delivered'],
        );
      } finally {
        await receiver.close();
      }
    });

    it('timeouts, 408 and 429 are retried; after the last attempt the task stays COMPLETED, marked exhausted', async () => {
      const receiver = await startReceiver(['hang', 408, 429, 200]);
      try {
        const task = await completedTask(receiver.url);
        const w = worker();
        for (let i = 0; i < 3; i++) {
          await w.pass();
          clock.ms += 60_000;
        }
        const logged = await log.list({ task_guid: task.task_guid });
        assert.deepEqual(
          logged.map((d) => [d.attempt, d.status_code ?? null, d.outcome]),
          [
            [1, null, 'retrying'],
            [2, 408, 'retrying'],
            [3, 429, 'exhausted'],
          ],
        );
        assert.match(logged[0]?.error ?? '', /timed out after 2000 ms/);
        assert.equal((await w.pass()).attempted, 0, 'no attempt after the last');
        assert.equal(receiver.requests.length, 3);
        const left = await store.getTask({ task_guid: task.task_guid });
        assert.equal(left.state, 'COMPLETED', "left for the converger's TTL");
      } finally {
        await receiver.close();
      }
    });

    it('an invalid URL is rejected without a request; tasks without a callback are left alone', async () => {
      const bad = await completedTask('ftp://example.invalid/x');
      const plain = await completedTask('');
      await worker().pass();
      assert.equal(await exists(bad.task_guid), false);
      const logged = await log.list({ task_guid: bad.task_guid });
      assert.equal(logged[0]?.outcome, 'rejected');
      assert.match(logged[0]?.error ?? '', /scheme/);
      assert.equal((await store.getTask({ task_guid: plain.task_guid })).state, 'COMPLETED');
      assert.deepEqual(await log.list({ task_guid: plain.task_guid }), []);
    });

    it('a task a consumer resolved first is not POSTed; a logged delivery is finished without a second POST', async () => {
      const receiver = await startReceiver([200]);
      try {
        const task = await completedTask(receiver.url);
        await store.resolvingTask({ task_guid: task.task_guid, expected: task.modification_tag });
        assert.equal((await worker().pass()).attempted, 0);
        assert.equal(receiver.requests.length, 0);

        // The server stopped between logging a 2xx and deleting: the next pass only deletes.
        const other = await completedTask(receiver.url);
        await log.record({
          task_guid: other.task_guid,
          task_epoch: other.modification_tag.epoch,
          url: receiver.url,
          attempt: 1,
          at: new Date(clock.ms).toISOString(),
          status_code: 200,
          outcome: 'delivered',
          duration_ms: 3,
        });
        const pass = await worker().pass();
        assert.equal(pass.attempted, 0);
        assert.equal(pass.finished, 1);
        assert.equal(await exists(other.task_guid), false);
        assert.equal(receiver.requests.length, 0);
      } finally {
        await receiver.close();
      }
    });

    it("a re-desired guid starts with an empty log; prune drops only gone tasks' old rows", async () => {
      const receiver = await startReceiver([404]);
      try {
        const first = await completedTask(receiver.url);
        await worker().pass();
        assert.equal(await exists(first.task_guid), false);
        const again = await store.desireTask({
          task_guid: first.task_guid,
          domain: 'test',
          image: 'busybox',
          env: {},
          memory_mb: 0,
          disk_mb: 0,
          result_file: '',
          completion_callback_url: '',
          placement_tags: [],
        });
        assert.deepEqual(
          await log.list({ task_guid: again.task_guid, task_epoch: again.modification_tag.epoch }),
          [],
        );
        assert.equal(
          (await log.list({ task_guid: again.task_guid })).length,
          1,
          'the old rows stay for a while',
        );
        const far = new Date(Date.now() + 86_400_000 * 365).toISOString();
        assert.ok((await log.prune({ before: far })) >= 1);
        assert.deepEqual(await log.list({ task_guid: again.task_guid }), []);
      } finally {
        await receiver.close();
      }
    });

    it('run(): a completed task is delivered at once (woken by the commit), not at the next poll', async () => {
      const receiver = await startReceiver([200]);
      const controller = new AbortController();
      const running = new TaskCallbackWorker({
        store,
        log,
        config: { pollMs: 60_000, allowPrivateTargets: true },
        onStoreChange: (listener) => store.onEvents(listener),
      }).run({ signal: controller.signal });
      try {
        // Let the first (empty) pass finish, so only the wake-up can find the task.
        await new Promise((resolve) => setTimeout(resolve, 200));
        const task = await completedTask(receiver.url);
        const deadline = Date.now() + 5_000;
        while ((await exists(task.task_guid)) && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        assert.equal(await exists(task.task_guid), false);
        assert.equal(receiver.requests.length, 1);
      } finally {
        controller.abort();
        await running;
        await receiver.close();
      }
    });
  });
}
