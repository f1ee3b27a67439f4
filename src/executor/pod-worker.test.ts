import assert from 'node:assert/strict';
import { closeSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isBerthError, isNotFound } from '../core/index.js';
import { PodRuntime } from '../runtime/index.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { PodWorker } from './pod-worker.js';

const dataDir = mkdtempSync(join(tmpdir(), 'berth-pod-worker-'));
const worker = new PodWorker(dataDir);
after(async () => {
  await worker.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('PodWorker (PodRuntime.prepare and remove on a worker thread)', () => {
  it('prepares a pod whose lock fd this thread holds, as PodRuntime.prepare does', async () => {
    const images = busyboxResolver();
    const runtime = new PodRuntime(dataDir, images);
    const image = await runtime.resolveImage('busybox');
    const prepared = await worker.prepare(
      'busybox',
      image,
      {},
      {
        command: ['/bin/true'],
        net: 'none',
        labels: { who: 'worker' },
      },
    );
    assert.equal(prepared.location.phase, 'prepare');
    assert.deepEqual(prepared.manifest.labels, { who: 'worker' });
    assert.equal(prepared.manifest.image.rootfs, images.rootfs);
    // Held exclusively by this process: the pod reads as preparing until the fd is closed.
    assert.equal(runtime.status(prepared.location.uuid).state, 'preparing');
    assert.ok(runtime.store.move(prepared.location, 'prepared'));
    closeSync(prepared.lockFd);
    assert.equal(runtime.status(prepared.location.uuid).state, 'prepared');
    await worker.remove(prepared.location.uuid);
    assert.throws(() => runtime.store.locate(prepared.location.uuid), isNotFound);
  });

  it('refuses what prepare refuses, with its code', async () => {
    const runtime = new PodRuntime(dataDir, busyboxResolver());
    const image = await runtime.resolveImage('busybox');
    await assert.rejects(
      worker.prepare('busybox', image, {}, { name: 'bad name!' }),
      (err: unknown) => isBerthError(err) && err.code === 'invalid_argument',
    );
  });

  it('removes a prepared pod from disk, as PodRuntime.remove does', async () => {
    const runtime = new PodRuntime(dataDir, busyboxResolver());
    const uuid = await runtime.prepareOnly('busybox', { command: ['/bin/true'], net: 'none' });
    const path = runtime.store.path(runtime.store.locate(uuid));
    assert.ok(existsSync(path));
    await worker.remove(uuid);
    assert.equal(existsSync(path), false);
    assert.throws(() => runtime.store.locate(uuid), isNotFound);
  });

  it('closes only once the removals already asked for are done', async () => {
    const runtime = new PodRuntime(dataDir, busyboxResolver());
    const uuid = await runtime.prepareOnly('busybox', { command: ['/bin/true'], net: 'none' });
    const own = new PodWorker(dataDir);
    const removed = own.remove(uuid);
    await own.close();
    await removed;
    assert.throws(() => runtime.store.locate(uuid), isNotFound);
  });

  it("serves a removal asked for while closing, not failed by the closing thread's end", {
    timeout: 30_000,
  }, async () => {
    const runtime = new PodRuntime(dataDir, busyboxResolver());
    const uuid = await runtime.prepareOnly('busybox', { command: ['/bin/true'], net: 'none' });
    const own = new PodWorker(dataDir);
    await assert.rejects(own.remove('00000000-0000-0000-0000-000000000000'), isNotFound);
    // A cell stopping while a container is deleted: the removal comes after close began, and
    // goes to a new thread; the old thread's exit (terminate's code 1) comes after it was sent.
    const closing = own.close();
    const removed = own.remove(uuid);
    await closing;
    await removed;
    assert.throws(() => runtime.store.locate(uuid), isNotFound);
    await own.close();
  });

  it("keeps the runtime's error code: a pod that is not there is not_found", async () => {
    await assert.rejects(worker.remove('00000000-0000-0000-0000-000000000000'), isNotFound);
  });

  it('removes several pods at once, each answer to its own caller', async () => {
    const runtime = new PodRuntime(dataDir, busyboxResolver());
    const uuids = await Promise.all(
      [1, 2, 3].map(() => runtime.prepareOnly('busybox', { command: ['/bin/true'], net: 'none' })),
    );
    await Promise.all(uuids.map((uuid) => worker.remove(uuid)));
    for (const uuid of uuids) assert.throws(() => runtime.store.locate(uuid), isNotFound);
  });
});
