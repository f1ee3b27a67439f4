import assert from 'node:assert/strict';
import { closeSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { openDirFd, tryLock } from '../runtime/flock.js';
import { openImageStore } from '../runtime/image/index.js';
import { sha256, tarBytes, writeOciLayout } from '../testing/oci-fixture-builder.js';
import { startRegistry } from '../testing/registry-test-server.js';
import { pushImage } from './image-transfer.js';
import { ImagePullError, pullingImageResolver } from './pulling-image-resolver.js';
import { RegistryClient } from './registry-client.js';

describe('pullingImageResolver', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-resolver-'));
  let app: FastifyInstance;
  let url = '';
  let blobGets = 0;
  let configDigest = '';

  before(async () => {
    ({ app, url } = await startRegistry(join(scratch, 'server'), (request) => {
      if (request.method === 'GET' && /\/blobs\/sha256:/.test(request.url)) blobGets += 1;
    }));
    const layout = join(scratch, 'layout');
    mkdirSync(layout);
    const layers = [
      await tarBytes([{ name: 'a', body: 'first layer\n' }]),
      await tarBytes([{ name: 'b', body: 'second layer\n' }]),
    ];
    ({ configDigest } = writeOciLayout(layout, { layers }));
    const seed = openImageStore(join(scratch, 'seed'));
    await seed.importArchive(layout, { name: 'apps/web:1' });
    await pushImage(seed, new RegistryClient({ serverUrl: url }), 'apps/web:1');
  });
  after(async () => {
    await app.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('resolves locally when it can, else pulls once for many concurrent resolves', async () => {
    const store = openImageStore(join(scratch, 'cell'));
    const resolver = pullingImageResolver({ store, serverUrl: url });
    blobGets = 0;
    const all = await Promise.all(Array.from({ length: 20 }, () => resolver.resolve('apps/web:1')));
    assert.equal(resolver.pulls, 1, 'one pull for 20 instances');
    assert.equal(blobGets, 3, 'config + 2 layers fetched once each');
    assert.equal(new Set(all.map((i) => i.rootfs)).size, 1);
    assert.equal(all[0]?.id, configDigest);
    assert.ok(existsSync(join(all[0]?.rootfs ?? '', 'b')));
    await resolver.resolve('apps/web:1');
    assert.equal(resolver.pulls, 1, 'a later resolve is local');
  });

  it('a pull failure is an ImagePullError with the cause code (not_found, unavailable)', async () => {
    const store = openImageStore(join(scratch, 'cell2'));
    const resolver = pullingImageResolver({ store, serverUrl: url });
    await assert.rejects(resolver.resolve('apps/missing:1'), (err: unknown) => {
      assert.ok(err instanceof ImagePullError);
      assert.equal(err.code, 'not_found');
      assert.equal(err.details.reason, 'image_pull_failed');
      assert.match(err.message, /^Cannot pull image "apps\/missing:1" from http:\/\/127\.0\.0\.1:\d+: /);
      return true;
    });
    const down = pullingImageResolver({ store, serverUrl: 'http://127.0.0.1:1' });
    await assert.rejects(down.resolve('apps/web:1'), (err: unknown) => {
      assert.ok(err instanceof ImagePullError);
      assert.equal(err.code, 'unavailable');
      assert.equal(err.retryable, true);
      return true;
    });
    // An image id cannot be pulled: the local not_found stands, unwrapped.
    await assert.rejects(resolver.resolve(`sha256:${'0'.repeat(64)}`), (err: Error & { code?: string }) => {
      assert.ok(!(err instanceof ImagePullError));
      return err.code === 'not_found';
    });
  });

  it('a blob that does not match its digest is refused and leaves nothing in the store', async () => {
    const store = openImageStore(join(scratch, 'cell3'));
    const honest = Buffer.from('honest bytes');
    await assert.rejects(
      store.putBlob(Readable.from([Buffer.from('tampered bytes')]), { digest: sha256(honest) }),
      /digest/,
    );
    assert.equal(store.hasBlob(sha256(honest)), false);
    assert.deepEqual(readdirSync(join(scratch, 'cell3', 'images', 'tmp')), []);
  });
});

describe('image prune (ImageStore.gc with pending blobs and pods)', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-prune-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('keeps referenced and pending blobs, removes unreferenced ones after the grace period', async () => {
    const dir = join(scratch, 'data');
    const store = openImageStore(dir);
    const layout = join(scratch, 'layout');
    mkdirSync(layout);
    writeOciLayout(layout, { layers: [await tarBytes([{ name: 'x', body: 'x' }])] });
    const image = await store.importArchive(layout, { name: 'kept:1' });
    const stray = Buffer.from('pushed but never referenced');
    await store.putBlob(Readable.from([stray]), { digest: sha256(stray) });
    let result = await store.gc();
    assert.equal(result.ran, true);
    assert.equal(result.blobsRemoved, 0);
    assert.equal(result.pendingKept, 1, 'a fresh push may still get its manifest');
    result = await store.gc({ pendingGraceMs: 0 });
    assert.equal(result.blobsRemoved, 1);
    assert.equal(store.hasBlob(sha256(stray)), false);
    const resolved = await store.resolve('kept:1');
    assert.equal(store.hasBlob(resolved.manifestDigest), true);
    assert.equal(store.hasBlob(image.id), true, 'the config blob stays');
    assert.ok(existsSync(resolved.rootfs));
  });

  it('never deletes the rootfs a running pod uses, even after the image is removed', async () => {
    const dir = join(scratch, 'pods');
    const store = openImageStore(dir);
    const layout = join(scratch, 'layout2');
    mkdirSync(layout);
    writeOciLayout(layout, { layers: [await tarBytes([{ name: 'y', body: 'y' }])] });
    await store.importArchive(layout, { name: 'running:1' });
    const resolved = await store.resolve('running:1');
    // A pod in run/ whose lock is held is running (seed 000): pod.json names the rootfs.
    const uuid = '11111111-2222-4333-8444-555555555555';
    const podDir = join(dir, 'pods', 'run', uuid);
    mkdirSync(podDir, { recursive: true });
    writeFileSync(
      join(podDir, 'pod.json'),
      JSON.stringify({ uuid, image: { ref: 'running:1', id: resolved.id, rootfs: resolved.rootfs } }),
    );
    const fd = openDirFd(podDir);
    assert.ok(tryLock(fd, 'exclusive'));
    try {
      const removed = await store.remove('running:1');
      assert.equal(removed.deleted, resolved.id);
      assert.ok(existsSync(resolved.rootfs), 'remove kept the rootfs of the running pod');
      const result = await store.gc({ pendingGraceMs: 0 });
      assert.equal(result.rootfsInUse, 1);
      assert.ok(existsSync(join(resolved.rootfs, 'y')), 'gc kept it too');
    } finally {
      closeSync(fd);
    }
    const result = await store.gc({ pendingGraceMs: 0 });
    assert.equal(result.rootfsRemoved, 1, 'once the pod exited, the rootfs goes');
    assert.equal(existsSync(resolved.rootfs), false);
  });
});
