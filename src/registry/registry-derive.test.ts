import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { hostArchitecture, openImageStore } from '../runtime/image/index.js';
import { tarBytes } from '../testing/oci-fixture-builder.js';
import { startRegistry } from '../testing/registry-test-server.js';

/**
 * How berth derives its runnable image from what a client pushes: diff_ids checked at the tag
 * PUT from the digests the uploads computed (a mismatch is stored and served but not run), the rootfs written after the reply or on first use,
 * and an index's host child pushed after the index.
 */

const ociManifest = 'application/vnd.oci.image.manifest.v1+json';
const ociIndex = 'application/vnd.oci.image.index.v1+json';

function digestOf(data: Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

describe('registry: the runnable image derived from a push', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-registry-derive-'));
  const serverDir = join(scratch, 'server');
  let app: FastifyInstance;
  let url = '';
  before(async () => {
    ({ app, url } = await startRegistry(serverDir));
  });
  after(async () => {
    await app.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** A chunked upload in two PATCHes, as skopeo and podman stream a layer. */
  async function pushChunked(repo: string, data: Buffer): Promise<{ digest: string; size: number }> {
    const start = await fetch(`${url}/v2/${repo}/blobs/uploads/`, { method: 'POST' });
    const location = start.headers.get('location') ?? '';
    const half = Math.floor(data.length / 2);
    for (const [from, to] of [
      [0, half],
      [half, data.length],
    ] as const) {
      const patch = await fetch(`${url}${location}`, {
        method: 'PATCH',
        body: data.subarray(from, to),
        headers: { 'content-type': 'application/octet-stream', 'content-range': `${from}-${to - 1}` },
      });
      assert.equal(patch.status, 202, await patch.clone().text());
    }
    const digest = digestOf(data);
    const done = await fetch(`${url}${location}?digest=${digest}`, { method: 'PUT' });
    assert.equal(done.status, 201, await done.clone().text());
    return { digest, size: data.length };
  }

  /** An image of one gzip'd layer holding `file`, its config naming `diffId` (the true one by default). */
  async function image(repo: string, file: string, options: { diffId?: string; arch?: string } = {}) {
    const tar = await tarBytes([{ name: file, body: `${file}\n`.repeat(20_000) }]);
    const layer = await pushChunked(repo, gzipSync(tar));
    const configBytes = Buffer.from(
      JSON.stringify({
        architecture: options.arch ?? hostArchitecture(),
        os: 'linux',
        config: { Cmd: ['/bin/sh'] },
        rootfs: { type: 'layers', diff_ids: [options.diffId ?? digestOf(tar)] },
      }),
    );
    const config = await pushChunked(repo, configBytes);
    const body = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: ociManifest,
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...layer }],
      }),
    );
    return { body, digest: digestOf(body), size: body.length, config, layer, diffId: digestOf(tar) };
  }

  function putManifest(repo: string, reference: string, body: Buffer, type = ociManifest) {
    return fetch(`${url}/v2/${repo}/manifests/${reference}`, {
      method: 'PUT',
      body,
      headers: { 'content-type': type },
    });
  }

  it('a tag push names the image at once; the rootfs is on disk when the image is resolved', async () => {
    const pushed = await image('derive/now', 'hello');
    const diffIdCache = join(serverDir, 'images', 'diffids', 'sha256', pushed.layer.digest.slice(7));
    assert.equal(
      readFileSync(diffIdCache, 'utf8'),
      pushed.diffId,
      'the upload inflated the layer for its diff_id',
    );
    const put = await putManifest('derive/now', 'v1', pushed.body);
    assert.equal(put.status, 201, await put.clone().text());
    const store = openImageStore(serverDir);
    assert.equal(store.names()['derive/now:v1'], pushed.config.digest, 'named before the rootfs exists');
    const resolved = await store.resolve('derive/now:v1');
    assert.equal(resolved.id, pushed.config.digest);
    assert.equal(readFileSync(join(resolved.rootfs, 'hello'), 'utf8'), 'hello\n'.repeat(20_000));
  });

  it('diff_ids are checked at the tag PUT, from the upload or (no cached digest) by inflating', async () => {
    const bad = await image('derive/bad', 'bad', { diffId: digestOf(Buffer.from('not the layer')) });
    // Stored and served as pushed (the spec's registry keeps what it is given), named for
    // nothing runnable, and the client told why in a Warning.
    const stored = await putManifest('derive/bad', 'v1', bad.body);
    assert.equal(stored.status, 201, await stored.clone().text());
    assert.match(stored.headers.get('warning') ?? '', /^299 - "berth will not run this image: .*diff_id/);
    assert.equal(openImageStore(serverDir).names()['derive/bad:v1'], undefined);
    const served = await fetch(`${url}/v2/derive/bad/manifests/v1`);
    assert.ok(Buffer.from(await served.arrayBuffer()).equals(bad.body), 'served byte for byte');
    await assert.rejects(openImageStore(serverDir).resolve('derive/bad:v1'), /diff_id/);

    const good = await image('derive/bad', 'good');
    assert.equal((await putManifest('derive/bad', 'v2', good.body)).status, 201);
    assert.ok(openImageStore(serverDir).names()['derive/bad:v2'] !== undefined);
    rmSync(join(serverDir, 'images', 'diffids'), { recursive: true, force: true });
    const again = await putManifest('derive/bad', 'v2', bad.body);
    assert.equal(again.status, 201);
    assert.match(again.headers.get('warning') ?? '', /diff_id/, 'found without the cached digest too');
    assert.equal(
      openImageStore(serverDir).names()['derive/bad:v2'],
      undefined,
      'the tag moved to the bad image: its old name goes',
    );
    rmSync(join(serverDir, 'images', 'diffids'), { recursive: true, force: true });
    const accepted = await putManifest('derive/bad', 'v3', good.body);
    assert.equal(accepted.status, 201, await accepted.clone().text());
    assert.equal(accepted.headers.get('warning'), null);
    const resolved = await openImageStore(serverDir).resolve('derive/bad:v3');
    assert.ok(existsSync(join(resolved.rootfs, 'good')));
  });

  it('an index pushed before its host child: the tag runs the child once it comes', async () => {
    const host = await image('derive/index', 'host-child');
    const other = await image('derive/index', 'other-child', { arch: 's390x' });
    const index = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: ociIndex,
        manifests: [
          {
            mediaType: ociManifest,
            digest: other.digest,
            size: other.size,
            platform: { os: 'linux', architecture: 's390x' },
          },
          {
            mediaType: ociManifest,
            digest: host.digest,
            size: host.size,
            platform: { os: 'linux', architecture: hostArchitecture() },
          },
        ],
      }),
    );
    assert.equal((await putManifest('derive/index', 'multi', index, ociIndex)).status, 201);
    const store = openImageStore(serverDir);
    await assert.rejects(store.resolve('derive/index:multi'), /image index with no linux\//);
    assert.equal((await putManifest('derive/index', host.digest, host.body)).status, 201);
    const resolved = await store.resolve('derive/index:multi');
    assert.equal(resolved.id, host.config.digest, "the host's child, pushed after the index");
    assert.ok(existsSync(join(resolved.rootfs, 'host-child')));
    const tag = await fetch(`${url}/v2/derive/index/manifests/multi`);
    assert.ok(Buffer.from(await tag.arrayBuffer()).equals(index), 'the tag still serves the pushed index');
  });
});
