import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { openImageStore } from '../runtime/image/index.js';
import { tarBytes, writeOciLayout } from '../testing/oci-fixture-builder.js';
import { startRegistry } from '../testing/registry-test-server.js';
import { pullImage, pushImage } from './image-transfer.js';
import { RegistryClient } from './registry-client.js';

function sha256(data: Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

interface ErrorBody {
  errors: { code: string; message: string; detail?: unknown }[];
}

describe('registry routes (OCI Distribution, in-process server)', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-registry-'));
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

  async function errorOf(response: Response): Promise<ErrorBody> {
    assert.match(response.headers.get('content-type') ?? '', /application\/json/);
    return (await response.json()) as ErrorBody;
  }

  it('GET /v2/ answers 200 with the API version header', async () => {
    const response = await fetch(`${url}/v2/`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('docker-distribution-api-version'), 'registry/2.0');
  });

  it('unknown manifests, blobs and uploads get the spec error bodies', async () => {
    const digest = sha256(Buffer.from('nothing'));
    let response = await fetch(`${url}/v2/library/busybox/manifests/latest`);
    assert.equal(response.status, 404);
    assert.deepEqual(await errorOf(response), {
      errors: [
        {
          code: 'NAME_UNKNOWN',
          message: 'repository "library/busybox" is not known',
          detail: { name: 'library/busybox' },
        },
      ],
    });
    response = await fetch(`${url}/v2/library/busybox/blobs/${digest}`);
    assert.equal(response.status, 404);
    assert.deepEqual(await errorOf(response), {
      errors: [{ code: 'BLOB_UNKNOWN', message: `blob ${digest} is not known`, detail: { digest } }],
    });
    response = await fetch(`${url}/v2/library/busybox/blobs/sha256:nothex`);
    assert.equal(response.status, 400);
    assert.equal((await errorOf(response)).errors[0]?.code, 'DIGEST_INVALID');
    response = await fetch(`${url}/v2/library/busybox/blobs/uploads/00000000-0000-4000-8000-000000000000`);
    assert.equal(response.status, 404);
    assert.equal((await errorOf(response)).errors[0]?.code, 'BLOB_UPLOAD_UNKNOWN');
    response = await fetch(`${url}/v2/Upper/Case/tags/list`);
    assert.equal(response.status, 400);
    assert.equal((await errorOf(response)).errors[0]?.code, 'NAME_INVALID');
    response = await fetch(`${url}/v2/library/busybox/manifests/latest`, { method: 'DELETE' });
    assert.equal(response.status, 404);
    assert.equal((await errorOf(response)).errors[0]?.code, 'MANIFEST_UNKNOWN');
    response = await fetch(`${url}/v2/library/busybox/tags/list`, { method: 'POST' });
    assert.equal(response.status, 405);
    assert.equal((await errorOf(response)).errors[0]?.code, 'UNSUPPORTED');
  });

  it('monolithic upload (POST ?digest=) then HEAD, GET and a Range GET', async () => {
    // Larger than the two 1 MiB buffers a GET is read through, so they are reused (blob-send.ts).
    const blob = randomBytes(2 * 1024 * 1024 + 300_001);
    const digest = sha256(blob);
    const post = await fetch(`${url}/v2/a/b/blobs/uploads/?digest=${digest}`, {
      method: 'POST',
      body: blob,
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(post.status, 201, await post.clone().text());
    assert.equal(post.headers.get('location'), `/v2/a/b/blobs/${digest}`);
    assert.equal(post.headers.get('docker-content-digest'), digest);
    const head = await fetch(`${url}/v2/a/b/blobs/${digest}`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(blob.length));
    assert.equal(head.headers.get('docker-content-digest'), digest);
    const get = await fetch(`${url}/v2/a/b/blobs/${digest}`);
    assert.equal(get.headers.get('content-length'), String(blob.length));
    assert.equal(get.headers.get('docker-content-digest'), digest);
    assert.equal(get.headers.get('docker-distribution-api-version'), 'registry/2.0');
    assert.ok(Buffer.from(await get.arrayBuffer()).equals(blob), 'the GET serves the blob byte for byte');
    const elsewhere = await fetch(`${url}/v2/other/repo/blobs/${digest}`);
    assert.equal(elsewhere.status, 404, 'a blob is readable only through a repository it was pushed to');
    assert.equal((await errorOf(elsewhere)).errors[0]?.code, 'BLOB_UNKNOWN');
    const range = await fetch(`${url}/v2/a/b/blobs/${digest}`, { headers: { range: 'bytes=10-19' } });
    assert.equal(range.status, 206);
    assert.equal(range.headers.get('content-range'), `bytes 10-19/${blob.length}`);
    assert.deepEqual(Buffer.from(await range.arrayBuffer()), blob.subarray(10, 20));
    const across = await fetch(`${url}/v2/a/b/blobs/${digest}`, {
      headers: { range: 'bytes=1048000-2098000' },
    });
    assert.equal(across.status, 206);
    assert.ok(Buffer.from(await across.arrayBuffer()).equals(blob.subarray(1048000, 2098001)));
    const wrong = await fetch(`${url}/v2/a/b/blobs/uploads/?digest=${sha256(Buffer.from('x'))}`, {
      method: 'POST',
      body: blob,
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(wrong.status, 400);
    assert.equal((await errorOf(wrong)).errors[0]?.code, 'DIGEST_INVALID');
  });

  async function startUpload(): Promise<string> {
    const response = await fetch(`${url}/v2/chunked/blob/blobs/uploads/`, { method: 'POST' });
    assert.equal(response.status, 202);
    assert.equal(response.headers.get('range'), '0-0');
    const location = response.headers.get('location') ?? '';
    assert.match(location, /^\/v2\/chunked\/blob\/blobs\/uploads\/[0-9a-f-]{36}$/);
    return location;
  }

  async function patch(location: string, chunk: Buffer, start: number): Promise<Response> {
    return fetch(`${url}${location}`, {
      method: 'PATCH',
      body: chunk,
      headers: {
        'content-type': 'application/octet-stream',
        'content-range': `${start}-${start + chunk.length - 1}`,
      },
    });
  }

  it('chunked upload: ordered chunks, 416 for a gap, status, and a wrong digest leaves nothing', async () => {
    const data = randomBytes(300_000);
    const location = await startUpload();
    let response = await patch(location, data.subarray(0, 100_000), 0);
    assert.equal(response.status, 202);
    assert.equal(response.headers.get('range'), '0-99999');
    response = await patch(location, data.subarray(150_000, 200_000), 150_000);
    assert.equal(response.status, 416);
    assert.equal(response.headers.get('range'), '0-99999');
    assert.equal((await errorOf(response)).errors[0]?.code, 'BLOB_UPLOAD_INVALID');
    response = await fetch(`${url}${location}`);
    assert.equal(response.status, 204);
    assert.equal(response.headers.get('range'), '0-99999');
    response = await patch(location, data.subarray(100_000), 100_000);
    assert.equal(response.status, 202);
    assert.equal(response.headers.get('range'), '0-299999');
    const honest = sha256(data);
    const claimed = sha256(Buffer.from('something else'));
    response = await fetch(`${url}${location}?digest=${claimed}`, { method: 'PUT' });
    assert.equal(response.status, 400);
    assert.deepEqual(await errorOf(response), {
      errors: [
        {
          code: 'DIGEST_INVALID',
          message: `the uploaded content has digest ${honest}, not ${claimed}`,
          detail: { expected: claimed, actual: honest },
        },
      ],
    });
    for (const digest of [honest, claimed]) {
      const head = await fetch(`${url}/v2/chunked/blob/blobs/${digest}`, { method: 'HEAD' });
      assert.equal(head.status, 404, 'no blob became visible');
    }
    assert.equal((await fetch(`${url}${location}`)).status, 404, 'the upload is gone');
    assert.deepEqual(readdirSync(join(serverDir, 'images', 'uploads')), []);
    assert.equal(existsSync(join(serverDir, 'images', 'blobs', 'sha256', honest.slice(7))), false);
  });

  it('chunked upload with the right digest, final chunk in the PUT', async () => {
    const data = randomBytes(50_000);
    const location = await startUpload();
    assert.equal((await patch(location, data.subarray(0, 20_000), 0)).status, 202);
    const response = await fetch(`${url}${location}?digest=${sha256(data)}`, {
      method: 'PUT',
      body: data.subarray(20_000),
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(response.status, 201, await response.clone().text());
    const get = await fetch(`${url}/v2/chunked/blob/blobs/${sha256(data)}`);
    assert.deepEqual(Buffer.from(await get.arrayBuffer()), data);
  });

  it('a manifest naming a missing blob is refused with MANIFEST_BLOB_UNKNOWN; nothing is tagged', async () => {
    const config = Buffer.from(
      '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}',
    );
    const post = await fetch(`${url}/v2/x/y/blobs/uploads/?digest=${sha256(config)}`, {
      method: 'POST',
      body: config,
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(post.status, 201);
    const missing = sha256(Buffer.from('never uploaded'));
    const manifest = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: {
        mediaType: 'application/vnd.oci.image.config.v1+json',
        digest: sha256(config),
        size: config.length,
      },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: missing, size: 10 }],
    });
    const response = await fetch(`${url}/v2/x/y/manifests/v1`, {
      method: 'PUT',
      body: manifest,
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
    });
    assert.equal(response.status, 400);
    assert.deepEqual(await errorOf(response), {
      errors: [
        {
          code: 'MANIFEST_BLOB_UNKNOWN',
          message: `blob ${missing} is not in the registry`,
          detail: { digest: missing },
        },
      ],
    });
    assert.equal((await fetch(`${url}/v2/x/y/tags/list`)).status, 404);
    assert.deepEqual(openImageStore(serverDir).list(), []);
    const byDigest = await fetch(`${url}/v2/x/y/manifests/${sha256(Buffer.from('other'))}`, {
      method: 'PUT',
      body: manifest,
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
    });
    assert.equal(byDigest.status, 400);
    assert.equal((await errorOf(byDigest)).errors[0]?.code, 'DIGEST_INVALID');
  });

  it('berth push then pull round-trips an image: same manifest, same id, runnable rootfs', async () => {
    const layout = join(scratch, 'layout');
    mkdirSync(layout);
    const layer = await tarBytes([
      { name: 'etc/', type: 'directory', mode: 0o755 },
      { name: 'etc/motd', body: 'pushed\n' },
    ]);
    const { configDigest, manifestDigest } = writeOciLayout(layout, { layers: [layer] });
    const seed = openImageStore(join(scratch, 'seed'));
    await seed.importArchive(layout, { name: 'team/app:v1' });
    const client = new RegistryClient({ serverUrl: url });
    const pushed = await pushImage(seed, client, 'team/app:v1');
    assert.equal(pushed.manifestDigest, manifestDigest);
    assert.equal(pushed.blobsCopied, 2);
    const again = await pushImage(seed, client, 'team/app:v1', 'team/app:v2');
    assert.equal(again.blobsCopied, 0, 'blobs the registry has are skipped (HEAD)');
    const server = openImageStore(serverDir);
    assert.deepEqual(
      server.list().flatMap((i) => i.names),
      ['team/app:v1', 'team/app:v2'],
      'a tag PUT makes the image visible as name:tag',
    );
    const tags = await (await fetch(`${url}/v2/team/app/tags/list`)).json();
    assert.deepEqual(tags, { name: 'team/app', tags: ['v1', 'v2'] });
    const catalog = await (await fetch(`${url}/v2/_catalog`)).json();
    assert.deepEqual(catalog, { repositories: ['team/app'] });
    const head = await fetch(`${url}/v2/team/app/manifests/v1`, { method: 'HEAD' });
    assert.equal(head.headers.get('docker-content-digest'), manifestDigest);
    assert.equal(head.headers.get('content-type'), 'application/vnd.oci.image.manifest.v1+json');

    const other = openImageStore(join(scratch, 'other'));
    const pulled = await pullImage(other, client, 'team/app:v1');
    assert.equal(pulled.manifestDigest, manifestDigest);
    assert.equal(pulled.image.id, configDigest);
    const resolved = await other.resolve('team/app:v1');
    assert.equal(readFileSync(join(resolved.rootfs, 'etc/motd'), 'utf8'), 'pushed\n');
    assert.equal(
      readFileSync(other.blobPath(manifestDigest)).toString(),
      readFileSync(seed.blobPath(manifestDigest)).toString(),
    );
  });

  it('a manifest whose layer does not match the config diff_ids is stored, not run (a Warning says why)', async () => {
    const layout = join(scratch, 'bad-layout');
    mkdirSync(layout);
    const layer = await tarBytes([{ name: 'f', body: 'x' }]);
    writeOciLayout(layout, { layers: [layer], diffIds: [sha256(Buffer.from('not the layer'))] });
    const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
      manifests: { digest: string }[];
    };
    const manifestDigest = index.manifests[0]?.digest ?? '';
    const manifest = readFileSync(join(layout, 'blobs/sha256', manifestDigest.slice(7)));
    const doc = JSON.parse(manifest.toString()) as {
      config: { digest: string };
      layers: { digest: string }[];
    };
    for (const d of [doc.config.digest, ...doc.layers.map((l) => l.digest)]) {
      const bytes = readFileSync(join(layout, 'blobs/sha256', d.slice(7)));
      const r = await fetch(`${url}/v2/bad/image/blobs/uploads/?digest=${d}`, {
        method: 'POST',
        body: bytes,
      });
      assert.equal(r.status, 201);
    }
    const response = await fetch(`${url}/v2/bad/image/manifests/v1`, {
      method: 'PUT',
      body: manifest,
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
    });
    assert.equal(response.status, 201);
    assert.match(response.headers.get('warning') ?? '', /^299 - ".*diff_id.*"$/);
    assert.equal(openImageStore(serverDir).names()['bad/image:v1'], undefined);
    assert.equal((await fetch(`${url}/v2/bad/image/manifests/v1`)).status, 200);
  });

  it('the client reports registry errors as BerthErrors with a code', async () => {
    const client = new RegistryClient({ serverUrl: url });
    await assert.rejects(client.getManifest('no/such', 'v1'), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'not_found');
      assert.match(err.message, /NAME_UNKNOWN/);
      return true;
    });
    const down = new RegistryClient({ serverUrl: 'http://127.0.0.1:1' });
    await assert.rejects(
      down.getManifest('a', 'b'),
      (err: Error & { code?: string }) => err.code === 'unavailable',
    );
  });

  it('writes nothing outside the store for a blob path that tries to climb out', async () => {
    const response = await fetch(`${url}/v2/a/blobs/uploads/..%2F..%2Fetc`, { method: 'PATCH', body: 'x' });
    assert.ok(response.status === 404 || response.status === 400);
    assert.equal(existsSync(join(serverDir, 'etc')), false);
    assert.equal(existsSync(join(serverDir, 'images', 'etc')), false);
  });
});
