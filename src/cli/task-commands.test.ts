import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BbsServer, startBbsServer } from '../api/index.js';
import type { Task, TaskDelivery } from '../bbs/index.js';
import { desiredDefinition, desiredTask } from '../testing/bbs-fixtures.js';
import { runBerth, spawnBerth } from '../testing/berth-cli.js';

/**
 * The task, lrp and cells commands as real processes against a real server on SQLite (started
 * in-process so the test can play the cell: it starts and completes tasks through the store, as a
 * rep would). The server checks tokens; the CLI finds the admin token in --dir like a local user.
 */
const dir = mkdtempSync(join(tmpdir(), 'berth-cli-tasks-'));
let server: BbsServer;

before(async () => {
  server = await startBbsServer({
    db: join(dir, 'bbs.sqlite3'),
    listen: '127.0.0.1:0',
    logger: false,
    dataDir: dir,
    taskCallbacks: { backoffBaseMs: 1_000, backoffMaxMs: 2_000, pollMs: 100, timeoutMs: 2_000 },
    // The callback receivers below listen on 127.0.0.1.
    allowPrivateCallbacks: true,
  });
});

after(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const conn = () => ['--server', server.url, '--dir', dir];
const berth = (words: string[], ...args: string[]) => runBerth([...words, ...conn(), ...args]);

/** Plays the cell: waits for the task to be PENDING, then starts and completes it. */
async function completeAsCell(
  guid: string | (() => Promise<string | undefined>),
  outcome: { failed: boolean; failure_reason?: string; result?: string },
): Promise<Task> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const id = typeof guid === 'string' ? guid : await guid();
    const task = id ? (await server.store.listTasks()).find((t) => t.task_guid === id) : undefined;
    if (task?.state === 'PENDING') {
      const running = await server.store.startTask({
        task_guid: task.task_guid,
        expected: task.modification_tag,
        cell_id: 'fake-cell',
      });
      return server.store.completeTask({
        task_guid: task.task_guid,
        expected: running.modification_tag,
        cell_id: 'fake-cell',
        failed: outcome.failed,
        failure_reason: outcome.failure_reason ?? '',
        result: outcome.result ?? '',
      });
    }
    if (Date.now() > deadline) throw new Error('the task never became PENDING');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Runs `berth task run --wait …` while the test completes the task it created. */
async function runAndComplete(
  guid: string,
  outcome: { failed: boolean; failure_reason?: string; result?: string },
  extra: string[] = [],
) {
  const child = spawnBerth([
    'task',
    'run',
    ...conn(),
    '--wait',
    '--poll-interval',
    '50ms',
    '--guid',
    guid,
    '--result-file',
    '/tmp/out',
    ...extra,
    'busybox',
    '--',
    'sh',
    '-c',
    'echo done > /tmp/out',
  ]);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  await completeAsCell(guid, outcome);
  return { code: await exited, stdout, stderr };
}

const exists = async (guid: string) => (await server.store.listTasks()).some((t) => t.task_guid === guid);

describe('berth task', () => {
  it('task run without --wait prints the task_guid alone; the task is PENDING with the argv, env and memory', async () => {
    const result = await berth(
      ['task', 'run'],
      '--memory',
      '64',
      '--env',
      'A=1',
      '--env',
      'B=x=y',
      'busybox',
      '--',
      'sh',
      '-c',
      'echo "$A" > /r',
    );
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^[0-9a-f-]{36}\n$/);
    const task = await server.store.getTask({ task_guid: result.stdout.trim() });
    assert.equal(task.state, 'PENDING');
    assert.deepEqual(task.command, ['sh', '-c', 'echo "$A" > /r']);
    assert.deepEqual(task.env, { A: '1', B: 'x=y' });
    assert.equal(task.memory_mb, 64);
    assert.equal(task.domain, 'berth');
  });

  it('task run --wait prints the result and exits 0; the task is then resolved and deleted', async () => {
    const result = await runAndComplete('wait-ok', { failed: false, result: 'hello from the task\n' });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, 'hello from the task\n');
    assert.equal(await exists('wait-ok'), false);
  });

  it('task run --wait on a failing task exits non-zero with failure_reason on stderr', async () => {
    const result = await runAndComplete(
      'wait-fail',
      { failed: true, failure_reason: 'exited with status 7' },
      ['--keep'],
    );
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /task wait-fail failed: exited with status 7/);
    assert.equal(
      (await server.store.getTask({ task_guid: 'wait-fail' })).state,
      'COMPLETED',
      '--keep keeps it',
    );
  });

  it('task cancel → COMPLETED, failed, "task was cancelled"; get, list, rm', async () => {
    const created = await berth(['task', 'run'], '--guid', 'to-cancel', 'busybox', '--', 'sleep', '100');
    assert.equal(created.code, 0, created.stderr);
    const cancelled = await berth(['task', 'cancel'], 'to-cancel');
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.equal(cancelled.stdout, 'to-cancel\n');

    const got = await berth(['task', 'get'], 'to-cancel');
    assert.equal(got.code, 0, got.stderr);
    const task = JSON.parse(got.stdout) as Task & { deliveries: TaskDelivery[] };
    assert.equal(task.state, 'COMPLETED');
    assert.equal(task.failed, true);
    assert.equal(task.failure_reason, 'task was cancelled');
    assert.deepEqual(task.deliveries, []);

    const listed = await berth(['task', 'list'], '--format', 'json', '--state', 'COMPLETED');
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok((JSON.parse(listed.stdout) as Task[]).some((t) => t.task_guid === 'to-cancel'));
    const table = await berth(['task', 'list']);
    assert.match(table.stdout, /^TASK_GUID\s+STATE/);
    assert.match(table.stdout, /to-cancel\s+COMPLETED\s+failed: task was cancelled/);

    // The public API refuses to delete a task nobody resolved (resolve, then delete).
    const token = readFileSync(join(dir, 'admin.token'), 'utf8').trim();
    const refused = await fetch(`${server.url}/v1/tasks/to-cancel`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(refused.status, 409);
    assert.match(((await refused.json()) as { message: string }).message, /resolve/);

    const removed = await berth(['task', 'rm'], 'to-cancel');
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal(await exists('to-cancel'), false);
    const gone = await berth(['task', 'get'], 'to-cancel');
    assert.equal(gone.code, 3);
    assert.match(gone.stderr, /Cannot find Task "to-cancel"/);
  });

  it('resolve and DELETE routes: If-Match is a CAS (stale → 412); resolve, then delete', async () => {
    const token = readFileSync(join(dir, 'admin.token'), 'utf8').trim();
    const call = (method: string, path: string, headers: Record<string, string> = {}) =>
      fetch(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...headers } });
    await berth(['task', 'run'], '--guid', 'routes', 'busybox');
    const pendingEtag = (await call('GET', '/v1/tasks/routes')).headers.get('etag') ?? '';
    assert.equal((await call('POST', '/v1/tasks/routes/cancel')).status, 200);
    assert.equal((await call('POST', '/v1/tasks/routes/resolve', { 'if-match': pendingEtag })).status, 412);
    const resolved = await call('POST', '/v1/tasks/routes/resolve');
    assert.equal(resolved.status, 200);
    assert.equal(((await resolved.json()) as Task).state, 'RESOLVING');
    assert.equal((await call('DELETE', '/v1/tasks/routes', { 'if-match': pendingEtag })).status, 412);
    assert.equal(
      (await call('DELETE', '/v1/tasks/routes', { 'if-match': resolved.headers.get('etag') ?? '' })).status,
      204,
    );
    assert.equal((await call('GET', '/v1/tasks/routes')).status, 404);
  });

  it('task rm refuses a PENDING task unless --force', async () => {
    await berth(['task', 'run'], '--guid', 'still-pending', 'busybox');
    const refused = await berth(['task', 'rm'], 'still-pending');
    assert.equal(refused.code, 4);
    assert.match(refused.stderr, /it is PENDING; cancel it first/);
    const forced = await berth(['task', 'rm'], '--force', 'still-pending');
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(await exists('still-pending'), false);
  });

  it('--callback: a receiver answering 500 twice then 200 gets three POSTs, the log shows them, then the task is gone', async () => {
    const script = [500, 500, 200];
    const received: Task[] = [];
    const receiver: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        received.push(JSON.parse(body) as Task);
        res.writeHead(script.shift() ?? 200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    try {
      const created = await berth(['task', 'run'], '--guid', 'with-callback', '--callback', url, 'busybox');
      assert.equal(created.code, 0, created.stderr);
      await completeAsCell('with-callback', { failed: false, result: '42\n' });

      // While the task exists its log is on GET /v1/tasks/{guid} (and so on `berth task get`).
      let seen: TaskDelivery[] = [];
      const deadline = Date.now() + 20_000;
      while ((await exists('with-callback')) && Date.now() < deadline) {
        const got = await berth(['task', 'get'], 'with-callback');
        if (got.code === 0) {
          const deliveries = (JSON.parse(got.stdout) as { deliveries: TaskDelivery[] }).deliveries;
          if (deliveries.length > seen.length) seen = deliveries;
        }
      }
      assert.equal(await exists('with-callback'), false, 'deleted after the 2xx');
      assert.ok(seen.length >= 1, 'the log was visible while the task existed');
      assert.equal(seen[0]?.status_code, 500);
      assert.equal(seen[0]?.outcome, 'retrying');

      assert.equal(received.length, 3);
      assert.ok(received.every((t) => t.task_guid === 'with-callback' && t.result === '42\n'));
      const token = readFileSync(join(dir, 'admin.token'), 'utf8').trim();
      const log = (await (
        await fetch(`${server.url}/v1/tasks/with-callback/deliveries`, {
          headers: { authorization: `Bearer ${token}` },
        })
      ).json()) as { deliveries: TaskDelivery[] };
      assert.deepEqual(
        log.deliveries.map((d) => [d.attempt, d.status_code, d.outcome]),
        [
          [1, 500, 'retrying'],
          [2, 500, 'retrying'],
          [3, 200, 'delivered'],
        ],
      );
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });

  it('bad flags name themselves', async () => {
    const env = await berth(['task', 'run'], '--env', 'NOEQUALS', 'busybox');
    assert.equal(env.code, 2);
    assert.match(env.stderr, /--env "NOEQUALS": expected KEY=VALUE/);
    const callback = await berth(['task', 'run'], '--callback', 'ftp://x', 'busybox');
    assert.equal(callback.code, 2);
    assert.match(callback.stderr, /--callback/);
  });
});

describe('berth lrp and berth cells', () => {
  it('lrp desire with a bad file names every bad field', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'image: busybox\ninstances: three\nmemroy_mb: 64\n');
    const result = await berth(['lrp', 'desire'], bad);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /process_guid: expected required property/);
    assert.match(result.stderr, /instances: expected integer/);
    assert.match(result.stderr, /memroy_mb: unexpected property/);

    const badJson = join(dir, 'bad.json');
    writeFileSync(badJson, '{"process_guid": "x", "image": "busybox", "ports": [0]}');
    const json = await berth(['lrp', 'desire'], badJson);
    assert.equal(json.code, 2);
    assert.match(json.stderr, /ports\.0: expected integer to be greater or equal to 1/);
  });

  it('lrp desire, list, get, scale, rm', async () => {
    const file = join(dir, 'web.yaml');
    writeFileSync(
      file,
      [
        'process_guid: web',
        'image: busybox',
        'instances: 2',
        'command: [httpd, -f, -p, "8080"]',
        'memory_mb: 32',
        'ports: [8080]',
      ].join('\n'),
    );
    const desired = await berth(['lrp', 'desire'], file);
    assert.equal(desired.code, 0, desired.stderr);
    assert.equal(desired.stdout, 'web\n');
    assert.equal((await server.store.listActualLRPs({ process_guid: 'web' })).length, 2);
    assert.ok(
      (await server.store.listDomains()).some((d) => d.domain === 'berth'),
      'the domain is fresh',
    );

    const listed = await berth(['lrp', 'list']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /web\s+berth\s+2\s+0\s+32\s+busybox/);

    const scaled = await berth(['lrp', 'scale'], 'web', '5');
    assert.equal(scaled.code, 0, scaled.stderr);
    assert.equal((await server.store.getDesiredLRP({ process_guid: 'web' })).instances, 5);
    assert.equal((await server.store.listActualLRPs({ process_guid: 'web' })).length, 5);

    const got = await berth(['lrp', 'get'], '--format', 'json', 'web');
    assert.equal(got.code, 0, got.stderr);
    const view = JSON.parse(got.stdout) as {
      desired_lrp: { instances: number };
      actual_lrps: { index: number }[];
    };
    assert.equal(view.desired_lrp.instances, 5);
    assert.deepEqual(
      view.actual_lrps.map((a) => a.index),
      [0, 1, 2, 3, 4],
    );
    const text = await berth(['lrp', 'get'], 'web');
    assert.match(text.stdout, /instances=5/);
    assert.match(text.stdout, /\n4\s+UNCLAIMED/);

    const down = await berth(['lrp', 'scale'], 'web', '1');
    assert.equal(down.code, 0, down.stderr);
    assert.equal((await server.store.listActualLRPs({ process_guid: 'web' })).length, 1);

    const removed = await berth(['lrp', 'rm'], 'web');
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal((await server.store.listDesiredLRPs()).length, 0);
    const missing = await berth(['lrp', 'scale'], 'web', '3');
    assert.equal(missing.code, 3);
  });

  it("lrp scale, lrp rm and task cancel of a system's records are refused, naming the system and the command", async () => {
    // What a deploy of system "shop" leaves (its executor writes through the store in process).
    await server.store.upsertDomain({ domain: 'system-shop', ttl_ms: 0, owner: 'shop' });
    await server.store.desireLRP(desiredDefinition('shop.web.v1', 2, { domain: 'system-shop' }));
    await server.store.desireTask(desiredTask('shop.migrate.v1', { domain: 'system-shop' }));
    const refusals: ReadonlyArray<[string[], RegExp]> = [
      [['lrp', 'scale', 'shop.web.v1', '5'], /berth service scale shop\/<service> N/],
      [['lrp', 'rm', 'shop.web.v1'], /berth teardown shop/],
      [['task', 'cancel', 'shop.migrate.v1'], /berth teardown shop/],
    ];
    for (const [words, instead] of refusals) {
      const refused = await berth(words);
      assert.equal(refused.code, 4, `${words.join(' ')}: ${refused.stderr}`);
      assert.match(refused.stderr, /belongs to system "shop"/);
      assert.match(refused.stderr, instead);
    }
    assert.equal((await server.store.getDesiredLRP({ process_guid: 'shop.web.v1' })).instances, 2);
    assert.equal((await server.store.getTask({ task_guid: 'shop.migrate.v1' })).state, 'PENDING');
  });

  it('cells lists live cells', async () => {
    await server.store.heartbeatCell({
      presence: {
        cell_id: 'cell-z1',
        zone: 'z1',
        capacity: { memory_mb: 4096, disk_mb: 10240, containers: 100 },
        rep_url: 'http://127.0.0.1:9999',
        placement_tags: ['ssd'],
      },
      ttl_ms: 60_000,
    });
    const result = await berth(['cells']);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^CELL_ID\s+ZONE/);
    assert.match(result.stdout, /cell-z1\s+z1\s+4096\s+10240\s+100\s+http:\/\/127\.0\.0\.1:9999\s+ssd/);
    const json = await berth(['cells'], '--format', 'json');
    assert.equal((JSON.parse(json.stdout) as { cell_id: string }[])[0]?.cell_id, 'cell-z1');
  });

  it('a server that is not there is a clear error', async () => {
    const result = await runBerth(['cells', '--server', 'http://127.0.0.1:1', '--dir', dir]);
    assert.equal(result.code, 6);
    assert.match(result.stderr, /Cannot reach the berth server at http:\/\/127\.0\.0\.1:1/);
  });
});
