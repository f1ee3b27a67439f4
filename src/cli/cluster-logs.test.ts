import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BbsClient } from '../bbs/index.js';
import { TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 17, finding 5, on a real cell: a task that floods its output. Its log stays within the
 * cell's cap on disk, the cell reads only its tail, and the task's history is finalized (it was
 * left at `die` when the cell read the whole log into one string).
 */
const cluster = new TestCluster('berth-cluster-logs-');
let bbs: BbsClient;
let serverUrl = '';
const mib = 1024 * 1024;

before(async () => {
  serverUrl = await cluster.startServer('server', '1s');
  bbs = new BbsClient(serverUrl);
  await bbs.upsertDomain({ domain: 'tests', ttl_ms: 0 });
  await cluster.startCell('l1', 'z1', 63500, serverUrl, ['--log-size-max', '1m']);
  await waitFor('the cell', async () => ((await bbs.listCells()).length === 1 ? true : undefined));
});

after(() => cluster.cleanup());

describe('a task that floods its log', { timeout: 300_000 }, () => {
  it('completes, and its history is finalized with the tail of a log capped on disk', async () => {
    await bbs.desireTask({
      task_guid: 't-flood',
      domain: 'tests',
      image: 'bb:1',
      // 40 MB of "y\n": 40 times the cell's 1 MiB cap.
      command: ['/bin/sh', '-c', 'yes | head -c 40000000; echo THE-END'],
      env: {},
      memory_mb: 16,
      disk_mb: 16,
      result_file: '',
      completion_callback_url: '',
      placement_tags: [],
    });
    const done = await waitFor(
      't-flood COMPLETED',
      async () => {
        const t = await bbs.getTask({ task_guid: 't-flood' });
        return t.state === 'COMPLETED' ? t : undefined;
      },
      120_000,
    );
    assert.equal(done.failed, false, done.failure_reason);
    const record = await waitFor('the finalized history', async () => {
      const res = await fetch(`${serverUrl}/v1/containers/t-flood`);
      if (!res.ok) return undefined;
      const container = (await res.json()) as { status: string; logs_size: number; logs_truncated: boolean };
      return container.status === 'Complete' ? container : undefined;
    });
    assert.equal(record.logs_truncated, true);
    assert.ok(record.logs_size <= 2 * mib, `${record.logs_size} bytes of log were on disk`);
    const logs = (await (await fetch(`${serverUrl}/v1/containers/t-flood/logs`)).json()) as {
      text: string;
      truncated: boolean;
    };
    assert.ok(logs.text.endsWith('y\ny\nTHE-END\n'), logs.text.slice(-40));
    assert.ok(logs.text.length <= mib);
  });
});
