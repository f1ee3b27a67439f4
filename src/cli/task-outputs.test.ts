import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BbsClient } from '../bbs/index.js';
import { runBerth } from '../testing/berth-cli.js';
import { TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 19, item 7, on a real cluster: a `berth server` with token auth and a `berth cell` running
 * tasks in runc containers. A task's declared outputs are collected by its cell from the finished
 * container, uploaded, downloaded with `berth task outputs` byte for byte, and removed with the
 * task; collection that fails (too big, a symlink to a host file, a missing path) fails the task
 * with the reason.
 */
const cluster = new TestCluster('berth-task-outputs-');
let serverUrl = '';
let adminToken = '';
let viewerToken = '';

before(async () => {
  serverUrl = await cluster.startServer('server', '1s', ['--auth', 'tokens']);
  adminToken = readFileSync(join(cluster.root, 'server', 'admin.token'), 'utf8').trim();
  const created = await fetch(`${serverUrl}/v1/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'reader', role: 'viewer' }),
  });
  viewerToken = ((await created.json()) as { token: string }).token;
  await cluster.startCell('o1', 'z1', 63700, serverUrl, ['--token', adminToken]);
  const bbs = new BbsClient(serverUrl, { token: adminToken });
  await waitFor('the cell', async () => ((await bbs.listCells()).length === 1 ? true : undefined));
});

after(() => cluster.cleanup());

const conn = (token = adminToken) => ['--server', serverUrl, '--token', token];
const dest = (name: string) => join(cluster.root, 'downloads', name);

/** `berth task run --wait --keep` of a shell script in busybox, with extra flags. */
async function runTask(guid: string, script: string, flags: readonly string[]) {
  return runBerth([
    'task',
    'run',
    ...conn(),
    '--guid',
    guid,
    '--wait=120s',
    '--keep',
    '--poll-interval',
    '100ms',
    ...flags,
    'bb:1',
    '--',
    '/bin/sh',
    '-c',
    script,
  ]);
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('task outputs on a real cell', { timeout: 300_000 }, () => {
  it('collects a file and a directory, downloads them byte-equal; `task rm` removes them', async () => {
    const script = [
      'mkdir -p /out/sub',
      'seq 1 20000 > /out/seq.txt',
      'head -c 300000 /dev/urandom > /out/sub/random.bin',
      'echo done > /report.txt',
      'sha256sum /out/sub/random.bin | cut -d" " -f1 > /result',
    ].join(' && ');
    const run = await runTask('t-ok', script, [
      '--output',
      'tree=/out',
      '--output',
      'report=/report.txt',
      '--result-file',
      '/result',
      '-o',
      dest('at-run'),
    ]);
    assert.equal(run.code, 0, run.stderr);
    const randomDigest = run.stdout.trim();
    assert.match(randomDigest, /^[0-9a-f]{64}$/);
    const expectedSeq = `${Array.from({ length: 20000 }, (_, i) => i + 1).join('\n')}\n`;
    for (const dir of [dest('at-run'), dest('later')]) {
      if (dir === dest('later')) {
        // A viewer may read outputs, as it reads logs and results.
        const got = await runBerth(['task', 'outputs', 't-ok', ...conn(viewerToken), '-o', dir]);
        assert.equal(got.code, 0, got.stderr);
        assert.deepEqual(got.stdout.trim().split('\n').sort(), [
          join(dir, 'report'),
          join(dir, 'tree/seq.txt'),
          join(dir, 'tree/sub/random.bin'),
        ]);
      }
      assert.equal(readFileSync(join(dir, 'tree/seq.txt'), 'utf8'), expectedSeq);
      assert.equal(sha256(readFileSync(join(dir, 'tree/sub/random.bin'))), randomDigest);
      assert.equal(readFileSync(join(dir, 'report'), 'utf8'), 'done\n');
    }
    // Nothing is overwritten: a second download into the same dir is refused.
    const again = await runBerth(['task', 'outputs', 't-ok', ...conn(), '-o', dest('later')]);
    assert.equal(again.code, 4, again.stderr);
    assert.match(again.stderr, /exists already/);

    const removed = await runBerth(['task', 'rm', 't-ok', ...conn()]);
    assert.equal(removed.code, 0, removed.stderr);
    const gone = await fetch(`${serverUrl}/v1/tasks/t-ok/outputs`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    assert.equal(gone.status, 404);
  });

  it('fails the task with the reason when collection fails: too big, a symlink to a host file, a missing path', async () => {
    const cases = [
      {
        guid: 't-big',
        script: 'head -c 5000 /dev/zero > /big',
        flags: ['--output', 'big=/big', '--outputs-max-bytes', '1000'],
        reason:
          /Cannot collect output "big" \(\/big\): the task's outputs exceed their limit of 1000 bytes \(5000 bytes so far\)/,
      },
      {
        guid: 't-link',
        script: 'mkdir /out && echo mine > /out/ok && ln -s /etc/shadow /out/key',
        flags: ['--output', 'out=/out'],
        reason:
          /Cannot collect output "out" \(\/out\): \/out\/key is a symbolic link \(to \/etc\/shadow\); links are refused, not followed/,
      },
      {
        guid: 't-missing',
        script: 'true',
        flags: ['--output', 'gone=/nowhere/file'],
        reason: /Cannot collect output "gone" \(\/nowhere\/file\): no such file or directory/,
      },
    ];
    for (const c of cases) {
      const run = await runTask(c.guid, c.script, [...c.flags, '-o', dest(c.guid)]);
      assert.equal(run.code, 1, `${c.guid}: ${run.stderr}`);
      assert.match(run.stderr, c.reason, c.guid);
      const task = await new BbsClient(serverUrl, { token: adminToken }).getTask({ task_guid: c.guid });
      assert.equal(task.state, 'COMPLETED');
      assert.equal(task.failed, true);
      assert.match(task.failure_reason, c.reason);
      // Nothing was stored, and nothing was unpacked.
      const outputs = await runBerth(['task', 'outputs', c.guid, ...conn(), '-o', dest(`${c.guid}-2`)]);
      assert.equal(outputs.code, 3, outputs.stderr);
      assert.equal(existsSync(dest(c.guid)), false);
    }
  });

  it('`task run --wait` without --keep unpacks the outputs, then deletes the task and them', async () => {
    const run = await runBerth([
      'task',
      'run',
      ...conn(),
      '--guid',
      't-once',
      '--wait=120s',
      '--poll-interval',
      '100ms',
      '--output',
      'answer=/answer',
      '-o',
      dest('once'),
      'bb:1',
      '--',
      '/bin/sh',
      '-c',
      'echo 42 > /answer',
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, '', 'stdout is the result alone (none here); the files go to stderr');
    assert.match(run.stderr, /once\/answer\n/);
    assert.equal(readFileSync(join(dest('once'), 'answer'), 'utf8'), '42\n');
    const gone = await fetch(`${serverUrl}/v1/tasks/t-once/outputs`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    assert.equal(gone.status, 404);
  });

  it('a viewer cannot upload outputs; a cell cannot store them for a task it does not run', async () => {
    const put = (token: string, guid: string) =>
      fetch(`${serverUrl}/v1/internal/task_outputs/${guid}?cell_id=o1&sha256=${'0'.repeat(64)}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/gzip' },
        body: 'not an archive',
      });
    assert.equal((await put(viewerToken, 't-big')).status, 403);
    const notRunning = await put(adminToken, 't-big');
    assert.equal(notRunning.status, 409);
    assert.match(((await notRunning.json()) as { message: string }).message, /the task is COMPLETED/);
  });
});
