import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { NotFoundError } from '../core/index.js';
import { Executor } from '../executor/index.js';
import {
  type ContainerWithHistory,
  HistoryStore,
  historyIdOf,
  localUser,
  noteUserStop,
  podDropbox,
} from '../history/index.js';
import { collectGarbage, PodRuntime } from '../runtime/index.js';
import { mountsUnder } from '../runtime/mounts.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { CellHistory } from './cell-history.js';

/**
 * Issue 19 item 8, on a real cell's executor and runc: what the cell journals ends in the history
 * as what happened — a launch that never ran is `Failed` with its reason (not `Complete`), and a
 * user's `berth stop` of a cell's pod is that user's action ending `Killed`, a stop, not a crash.
 */
const images = busyboxResolver();
const resolver = {
  resolve: async (ref: string) => {
    if (ref === 'nope:1') throw new NotFoundError('image', ref);
    return images.resolve(ref);
  },
};
const dataDir = mkdtempSync(join(tmpdir(), 'berth-cell-history-'));
const runtime = new PodRuntime(dataDir, resolver);
const executor = new Executor({
  runtime,
  capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
  hostAddress: '127.0.0.1',
  pollIntervalMs: 100,
  portRange: { from: 63300, to: 63349 },
});

describe('what a cell tells history', () => {
  let store: SqlBbsStore;
  let history: HistoryStore;
  let cellHistory: CellHistory;
  before(async () => {
    store = await openBbsStore(':memory:');
    history = await HistoryStore.open(store.database);
    executor.start();
    cellHistory = new CellHistory(dataDir, 'cell-1', executor, () => undefined);
    cellHistory.start(async (batch) => {
      await history.ingest(batch);
    });
  });
  after(async () => {
    await cellHistory.stop();
    executor.stop();
    await store.close();
    const runcRoot = join(dataDir, 'runc');
    if (existsSync(runcRoot)) {
      for (const id of readdirSync(runcRoot))
        spawnSync('runc', ['--root', runcRoot, 'delete', '--force', id]);
    }
    try {
      collectGarbage(new PodRuntime(dataDir, resolver), { gracePeriodMs: 0, expirePreparedMs: 0 });
    } catch {
      // Removed below all the same.
    }
    for (const point of mountsUnder(dataDir)) spawnSync('umount', ['-l', point]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** The container's record once `done` says it is, polled (delivery is asynchronous). */
  async function recordWhen(
    id: string,
    done: (c: ContainerWithHistory) => boolean,
  ): Promise<ContainerWithHistory> {
    // Each wait holds the event loop open: the executor's own timers do not.
    for (let attempt = 0; attempt < 300; attempt++) {
      const c = await history.getContainer(id).catch(() => undefined);
      if (c && done(c)) return c;
      await delay(100);
    }
    return history.getContainer(id);
  }

  const lrpTags = (guid: string) =>
    ({
      kind: 'lrp',
      process_guid: 'shop.web.v1',
      index: 0,
      instance_guid: guid,
      domain: 'system-shop',
    }) as const;

  it('a launch whose image cannot be found ends Failed with the reason', async () => {
    const guid = 'ig-no-image';
    executor.reserve(guid, lrpTags(guid), { memory_mb: 64, disk_mb: 0 });
    await executor.run(guid, { image: 'nope:1', env: {}, ports: [] });
    assert.equal(executor.get(guid)?.result?.kind, 'no-image');
    const record = await recordWhen(guid, (c) => c.finalized_at !== null);
    assert.equal(record.status, 'Failed', JSON.stringify(record.history));
    const last = record.history.at(-1);
    assert.equal(last?.entity_type, 'system');
    assert.match(last?.message ?? '', /Cannot find image "nope:1"/);
    assert.ok(!record.history.some((h) => h.status === 'Complete'));
    await executor.deleteContainer(guid);
  });

  it("a user's `berth stop` of a cell's pod is the user's action, ends Killed, and is not a crash", async () => {
    const guid = 'ig-user-stop';
    executor.reserve(guid, lrpTags(guid), { memory_mb: 64, disk_mb: 0 });
    await executor.run(guid, { image: 'bb', command: ['sleep', '300'], env: {}, ports: [] });
    await recordWhen(guid, (c) => c.status === 'Running');
    const pod = runtime.store.list().find((p) => historyIdOf(p.uuid, p.manifest) === guid);
    assert.ok(pod, 'the pod of the container');
    // What `berth stop UUID` does (src/cli/pod-commands.ts): the request, then the signal.
    noteUserStop(podDropbox(dataDir), runtime.store.path(pod), guid);
    await runtime.stop(pod.uuid, 500);
    const record = await recordWhen(
      guid,
      (c) => c.finalized_at !== null && c.history.some((h) => h.entity_type === 'user'),
    );
    const result = executor.get(guid)?.result;
    assert.equal(result?.kind, 'shutdown', 'a stop, which the rep does not count as a crash');
    assert.equal(result?.reason, `stopped by ${localUser()}`);
    const user = record.history.find((h) => h.entity_type === 'user');
    assert.equal(user?.entity_id, localUser());
    assert.equal(user?.status, 'stop');
    assert.equal(record.status, 'Killed', JSON.stringify(record.history));
    assert.ok(!record.history.some((h) => h.status === 'Failed'));
    await executor.deleteContainer(guid);
  });
});
