import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isNotFound } from '../core/index.js';
import { PodRuntime } from '../runtime/index.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { PodRemover } from './pod-remover.js';

const dataDir = mkdtempSync(join(tmpdir(), 'berth-pod-remover-'));
const remover = new PodRemover(dataDir);
after(async () => {
  await remover.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('PodRemover (PodRuntime.remove on a worker thread)', () => {
  it('removes a prepared pod from disk, as PodRuntime.remove does', async () => {
    const runtime = new PodRuntime(dataDir, busyboxResolver());
    const uuid = await runtime.prepareOnly('busybox', { command: ['/bin/true'], net: 'none' });
    const path = runtime.store.path(runtime.store.locate(uuid));
    assert.ok(existsSync(path));
    await remover.remove(uuid);
    assert.equal(existsSync(path), false);
    assert.throws(() => runtime.store.locate(uuid), isNotFound);
  });

  it("keeps the runtime's error code: a pod that is not there is not_found", async () => {
    await assert.rejects(remover.remove('00000000-0000-0000-0000-000000000000'), isNotFound);
  });

  it('removes several pods at once, each answer to its own caller', async () => {
    const runtime = new PodRuntime(dataDir, busyboxResolver());
    const uuids = await Promise.all(
      [1, 2, 3].map(() => runtime.prepareOnly('busybox', { command: ['/bin/true'], net: 'none' })),
    );
    await Promise.all(uuids.map((uuid) => remover.remove(uuid)));
    for (const uuid of uuids) assert.throws(() => runtime.store.locate(uuid), isNotFound);
  });
});
