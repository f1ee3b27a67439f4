import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BbsClient } from '../bbs/index.js';
import { runBerth, spawnBerth } from '../testing/berth-cli.js';
import { TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 22 for tasks, end to end on a real cell: `berth logs --task GUID` and `berth exec --task
 * GUID -- CMD` through the server, each line with the time the task printed it and its stream,
 * exit codes carried back, and a finished or missing task refused with a message.
 */
const cluster = new TestCluster('berth-task-stream-');
let bbs: BbsClient;
let serverUrl = '';

before(async () => {
  serverUrl = await cluster.startServer('server', '1s');
  bbs = new BbsClient(serverUrl);
  await bbs.upsertDomain({ domain: 'tests', ttl_ms: 0 });
  await cluster.startCell('t1', 'z1', 64800, serverUrl);
  await waitFor('the cell', async () => ((await bbs.listCells()).length === 1 ? true : undefined));
});

after(() => cluster.cleanup());

/** A task that prints to stdout and stderr with pauses, then runs until /tmp/done exists. */
const talkingTask = {
  task_guid: 'talking-task',
  domain: 'tests',
  image: 'bb:1',
  command: [
    '/bin/sh',
    '-c',
    'for i in 1 2 3; do echo "out $i"; sleep 0.2; echo "err $i" >&2; sleep 0.2; done; ' +
      'while [ ! -e /tmp/done ]; do sleep 0.1; done; echo bye',
  ],
  env: {},
  memory_mb: 16,
  disk_mb: 16,
  result_file: '',
  completion_callback_url: '',
  placement_tags: [],
};

/** A berth command against the server; `--server` goes first, before any `-- CMD`. */
const berth = (command: string, ...args: string[]) => runBerth([command, '--server', serverUrl, ...args]);

/** `TIME out N` / `TIME err N` lines of a `--timestamps` output, with their times. */
function stamped(text: string): { ms: number; text: string }[] {
  return text
    .trimEnd()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const match = /^(\S+) \[talking-task\] (.*)$/.exec(line);
      assert.ok(match, `a line with its time and source: ${line}`);
      return { ms: Date.parse(match[1] ?? ''), text: match[2] ?? '' };
    });
}

describe('a running task through the server', { timeout: 240_000 }, () => {
  it('berth logs --task: each line at the time it was printed, stdout and stderr apart', async () => {
    await bbs.desireTask(talkingTask);
    const logs = await waitFor(
      'all six lines of the task',
      async () => {
        const run = await berth('logs', '--task', 'talking-task', '--timestamps');
        return run.code === 0 && run.stderr.includes('err 3') ? run : undefined;
      },
      90_000,
    );
    const [out, err] = [stamped(logs.stdout), stamped(logs.stderr)];
    assert.deepEqual(
      out.map((l) => l.text),
      ['out 1', 'out 2', 'out 3'],
    );
    assert.deepEqual(
      err.map((l) => l.text),
      ['err 1', 'err 2', 'err 3'],
    );
    // The times are the task's, not the reader's: 200 ms apart, in the order printed.
    const merged = [...out, ...err].sort((a, b) => a.ms - b.ms);
    assert.deepEqual(
      merged.map((l) => l.text),
      ['out 1', 'err 1', 'out 2', 'err 2', 'out 3', 'err 3'],
    );
    assert.equal(new Set(merged.map((l) => l.ms)).size, 6);
    const raw = await fetch(`${serverUrl}/v1/logs?task=talking-task&tail=1`);
    const [last] = (await raw.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { stream?: string; line?: string });
    assert.deepEqual([last?.stream, last?.line], ['stderr', 'err 3']);
  });

  it("berth exec --task runs in the task's container and exits with the command's code", async () => {
    const ok = await berth(
      'exec',
      '--task',
      'talking-task',
      '--',
      '/bin/sh',
      '-c',
      'echo in-task; echo e >&2',
    );
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, 'in-task\n');
    assert.equal(ok.stderr, 'e\n');
    const failed = await berth('exec', '--task', 'talking-task', '--', '/bin/sh', '-c', 'exit 42');
    assert.equal(failed.code, 42, failed.stderr);
  });

  it('berth logs -f --task follows until the task ends, and exits by itself', async () => {
    const follower = spawnBerth([
      'logs',
      '-f',
      '--task',
      'talking-task',
      '--tail',
      '0',
      '--server',
      serverUrl,
    ]);
    let out = '';
    follower.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => follower.once('exit', resolve));
    try {
      // Started before the task is told to end: `bye` reaches it live.
      await new Promise((r) => setTimeout(r, 1000));
      const done = await berth('exec', '--task', 'talking-task', '--', 'touch', '/tmp/done');
      assert.equal(done.code, 0, done.stderr);
      assert.equal(await exited, 0);
      assert.equal(out, '[talking-task] bye\n');
    } finally {
      follower.kill('SIGINT');
    }
  });

  it('a finished task cannot be exec-ed into (409, exit 4); its logs still read', async () => {
    await waitFor('the task COMPLETED', async () =>
      (await bbs.getTask({ task_guid: 'talking-task' })).state === 'COMPLETED' ? true : undefined,
    );
    const exec = await berth('exec', '--task', 'talking-task', '--', 'true');
    assert.equal(exec.code, 4, exec.stderr);
    assert.match(exec.stderr, /Cannot exec into talking-task: it is COMPLETED, not RUNNING/);
    const post = await fetch(`${serverUrl}/v1/exec`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task: 'talking-task', command: ['true'] }),
    });
    assert.equal(post.status, 409, await post.text());
    // Once its cell has removed the container, the log the history kept (finalization).
    const logs = await waitFor('the finalized log', async () => {
      const run = await berth('logs', '--task', 'talking-task');
      return run.stdout.includes('bye') ? run : undefined;
    });
    assert.equal(logs.code, 0, logs.stderr);
    assert.equal(logs.stderr, '', 'the history keeps the text, not the streams');
    const lines = ['out 1', 'err 1', 'out 2', 'err 2', 'out 3', 'err 3', 'bye'];
    assert.equal(logs.stdout, lines.map((l) => `[talking-task] ${l}\n`).join(''));
  });
});

describe('a task that does not exist', { timeout: 60_000 }, () => {
  it('logs and exec are not_found (404, exit 3) naming the task', async () => {
    const logs = await berth('logs', '--task', 'no-such-task');
    assert.equal(logs.code, 3);
    assert.match(logs.stderr, /task "no-such-task"/);
    const exec = await berth('exec', '--task', 'no-such-task', '--', 'true');
    assert.equal(exec.code, 3);
    assert.match(exec.stderr, /task "no-such-task"/);
    assert.equal((await fetch(`${serverUrl}/v1/logs?task=no-such-task`)).status, 404);
    const post = await fetch(`${serverUrl}/v1/exec`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task: 'no-such-task', command: ['true'] }),
    });
    assert.equal(post.status, 404);
  });
});
