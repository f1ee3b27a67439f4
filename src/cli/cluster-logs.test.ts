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
  await Promise.all([
    cluster.startCell('l1', 'z1', 63500, serverUrl, ['--tags', 'default-cap']),
    cluster.startCell('l2', 'z1', 63600, serverUrl, ['--tags', 'small-cap', '--log-size-max', '1m']),
  ]);
  await waitFor('the cells', async () => ((await bbs.listCells()).length === 2 ? true : undefined));
});

after(() => cluster.cleanup());

/**
 * A line as long as a usual log line (80 bytes with its newline): each is a record of the log with
 * its time and stream, which for lines of two bytes (`yes`) would be twenty times the output.
 */
const floodLine = `flooding the log ${'.'.repeat(62)}`;

function floodTask(guid: string, bytes: number, tag: string) {
  return {
    task_guid: guid,
    domain: 'tests',
    image: 'bb:1',
    command: ['/bin/sh', '-c', `yes '${floodLine}' | head -c ${bytes}; echo THE-END`],
    env: {},
    memory_mb: 16,
    disk_mb: 16,
    result_file: '',
    completion_callback_url: '',
    placement_tags: [tag],
  };
}

/** Waits for the task to complete and its history to be finalized; returns both. */
async function finalized(guid: string) {
  const task = await waitFor(
    `${guid} COMPLETED`,
    async () => {
      const t = await bbs.getTask({ task_guid: guid });
      return t.state === 'COMPLETED' ? t : undefined;
    },
    120_000,
  );
  const record = await waitFor('the finalized history', async () => {
    const res = await fetch(`${serverUrl}/v1/containers/${guid}`);
    if (!res.ok) return undefined;
    const container = (await res.json()) as { status: string; logs_size: number; logs_truncated: boolean };
    return container.status === 'Complete' ? container : undefined;
  });
  const logs = (await (await fetch(`${serverUrl}/v1/containers/${guid}/logs`)).json()) as { text: string };
  return { task, record, logs };
}

describe('a task that floods its log', { timeout: 300_000 }, () => {
  it('more than a string can hold (600 MB): finalized with the tail of a log capped at the default', async () => {
    await bbs.desireTask(floodTask('t-huge', 600_000_000, 'default-cap'));
    const { task, record, logs } = await finalized('t-huge');
    assert.equal(task.failed, false, task.failure_reason);
    assert.equal(record.logs_truncated, true);
    assert.ok(record.logs_size <= 20 * mib, `${record.logs_size} bytes of log were on disk`);
    assert.ok(logs.text.endsWith(`${floodLine}\n${floodLine}\nTHE-END\n`), logs.text.slice(-200));
    assert.ok(logs.text.length <= mib);
  });

  it("the cell's --log-size-max caps each container's log", async () => {
    await bbs.desireTask(floodTask('t-flood', 40_000_000, 'small-cap'));
    const { task, record, logs } = await finalized('t-flood');
    assert.equal(task.failed, false, task.failure_reason);
    assert.equal(record.logs_truncated, true);
    assert.ok(record.logs_size <= 2 * mib, `${record.logs_size} bytes of log were on disk`);
    assert.ok(logs.text.endsWith(`${floodLine}\n${floodLine}\nTHE-END\n`), logs.text.slice(-200));
  });
});
