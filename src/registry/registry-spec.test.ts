import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { openImageStore } from '../runtime/image/index.js';
import { startRegistry } from '../testing/registry-test-server.js';

/**
 * The OCI distribution spec v1.1 by its conformance categories (pull, push, content discovery,
 * content management) and its error cases, over plain HTTP against an in-process registry.
 */

const ociManifest = 'application/vnd.oci.image.manifest.v1+json';
const ociIndex = 'application/vnd.oci.image.index.v1+json';
const dockerManifest = 'application/vnd.docker.distribution.manifest.v2+json';
const emptyType = 'application/vnd.oci.empty.v1+json';

function digestOf(data: Uint8Array, algorithm: 'sha256' | 'sha512' = 'sha256'): string {
  return `${algorithm}:${createHash(algorithm).update(data).digest('hex')}`;
}

interface ErrorBody {
  errors: { code: string; message: string }[];
}

describe('registry: OCI distribution spec categories', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-registry-spec-'));
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

  async function codeOf(response: Response): Promise<string | undefined> {
    return ((await response.json()) as ErrorBody).errors[0]?.code;
  }

  async function pushBlob(repo: string, data: Uint8Array, algorithm: 'sha256' | 'sha512' = 'sha256') {
    const digest = digestOf(data, algorithm);
    const response = await fetch(`${url}/v2/${repo}/blobs/uploads/?digest=${digest}`, {
      method: 'POST',
      body: data,
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(response.status, 201, await response.clone().text());
    return { digest, size: data.length };
  }

  function putManifest(repo: string, reference: string, body: string | Buffer, type = ociManifest) {
    return fetch(`${url}/v2/${repo}/manifests/${reference}`, {
      method: 'PUT',
      body,
      headers: { 'content-type': type },
    });
  }

  /** An artifact: empty config, one layer, optional subject, and a field berth does not know. */
  async function artifact(
    repo: string,
    text: string,
    artifactType: string,
    subject?: { digest: string; size: number },
  ) {
    const empty = await pushBlob(repo, Buffer.from('{}'));
    const layer = await pushBlob(repo, Buffer.from(text));
    const body = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: ociManifest,
        artifactType,
        config: { mediaType: emptyType, ...empty },
        layers: [{ mediaType: 'text/plain', ...layer }],
        ...(subject === undefined ? {} : { subject: { mediaType: ociManifest, ...subject } }),
        'x-berth-unknown': { kept: [1, 2, 3] },
      }),
    );
    return { body, digest: digestOf(body), size: body.length };
  }

  describe('pull', () => {
    it('two manifests of one config are both served by digest, byte for byte, each with its media type', async () => {
      const config = await pushBlob(
        'pull/same',
        Buffer.from('{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}'),
      );
      const oci = Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: ociManifest,
          config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
          layers: [],
        }),
      );
      // The same image as Docker v2s2, with whitespace a re-serializer would lose.
      const docker = Buffer.from(
        `{\n  "schemaVersion": 2,\n  "mediaType": "${dockerManifest}",\n  "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "${config.digest}", "size": ${config.size}},\n  "layers": []\n}`,
      );
      assert.equal((await putManifest('pull/same', 'oci', oci)).status, 201);
      const put = await putManifest('pull/same', 'docker', docker, dockerManifest);
      assert.equal(put.status, 201);
      assert.equal(put.headers.get('docker-content-digest'), digestOf(docker));
      for (const [bytes, type, tag] of [
        [oci, ociManifest, 'oci'],
        [docker, dockerManifest, 'docker'],
      ] as const) {
        for (const reference of [tag, digestOf(bytes)]) {
          const get = await fetch(`${url}/v2/pull/same/manifests/${reference}`);
          assert.equal(get.status, 200);
          assert.equal(get.headers.get('content-type'), type);
          assert.equal(get.headers.get('docker-content-digest'), digestOf(bytes));
          assert.ok(Buffer.from(await get.arrayBuffer()).equals(bytes), `${reference} byte for byte`);
          const head = await fetch(`${url}/v2/pull/same/manifests/${reference}`, { method: 'HEAD' });
          assert.equal(head.status, 200);
          assert.equal(head.headers.get('content-length'), String(bytes.length));
        }
      }
    });

    it('repository scoping: blobs and manifests are 404 through a repository they are not in; a mount links them', async () => {
      const blob = await pushBlob('scope/a', randomBytes(100));
      const { body, digest } = await artifact('scope/a', 'scoped', 'text/x-scoped');
      assert.equal((await putManifest('scope/a', 'v1', body)).status, 201);
      assert.equal((await fetch(`${url}/v2/scope/b/blobs/${blob.digest}`)).status, 404);
      const manifest = await fetch(`${url}/v2/scope/b/manifests/${digest}`);
      assert.equal(manifest.status, 404);
      const mountNoSource = await fetch(
        `${url}/v2/scope/b/blobs/uploads/?mount=${blob.digest}&from=scope/c`,
        {
          method: 'POST',
        },
      );
      assert.equal(
        mountNoSource.status,
        202,
        'a blob the source cannot read is not mounted: an upload starts',
      );
      const mount = await fetch(`${url}/v2/scope/b/blobs/uploads/?mount=${blob.digest}&from=scope/a`, {
        method: 'POST',
      });
      assert.equal(mount.status, 201);
      assert.equal(mount.headers.get('location'), `/v2/scope/b/blobs/${blob.digest}`);
      assert.equal((await fetch(`${url}/v2/scope/b/blobs/${blob.digest}`)).status, 200);
    });

    it('a reference that is neither a tag nor a digest: 404 to read or delete, 400 to push', async () => {
      const { body } = await artifact('pull/badref', 'bad reference', 'text/x-badref');
      assert.equal((await putManifest('pull/badref', 'v1', body)).status, 201);
      // The conformance suite's "nonexistent manifest" is such a name (a tag cannot start with '.').
      for (const method of ['GET', 'HEAD', 'DELETE']) {
        const response = await fetch(`${url}/v2/pull/badref/manifests/.INVALID_MANIFEST_NAME`, { method });
        assert.equal(response.status, 404, method);
        if (method !== 'HEAD') assert.equal(await codeOf(response), 'MANIFEST_UNKNOWN', method);
      }
      const unknownRepo = await fetch(`${url}/v2/pull/nobody/manifests/-dash`);
      assert.equal(unknownRepo.status, 404);
      assert.equal(await codeOf(unknownRepo), 'NAME_UNKNOWN');
      const push = await putManifest('pull/badref', '.hidden', body);
      assert.equal(push.status, 400);
      assert.equal(await codeOf(push), 'MANIFEST_INVALID');
      const tags = (await (await fetch(`${url}/v2/pull/badref/tags/list`)).json()) as { tags: string[] };
      assert.deepEqual(tags.tags, ['v1'], 'the refused push added no tag');
    });
  });

  describe('push', () => {
    it('sha512 blobs (monolithic and chunked) and a sha512 manifest; an unknown algorithm is DIGEST_INVALID', async () => {
      const data = randomBytes(70_000);
      const mono = await pushBlob('push/sha512', data, 'sha512');
      assert.match(mono.digest, /^sha512:[a-f0-9]{128}$/);
      const got = await fetch(`${url}/v2/push/sha512/blobs/${mono.digest}`);
      assert.equal(got.headers.get('docker-content-digest'), mono.digest);
      assert.ok(Buffer.from(await got.arrayBuffer()).equals(data));

      const chunked = randomBytes(50_000);
      const start = await fetch(`${url}/v2/push/sha512/blobs/uploads/`, { method: 'POST' });
      const location = start.headers.get('location') ?? '';
      const patch = await fetch(`${url}${location}`, {
        method: 'PATCH',
        body: chunked.subarray(0, 20_000),
        headers: { 'content-type': 'application/octet-stream', 'content-range': '0-19999' },
      });
      assert.equal(patch.status, 202);
      const done = await fetch(`${url}${location}?digest=${digestOf(chunked, 'sha512')}`, {
        method: 'PUT',
        body: chunked.subarray(20_000),
        headers: { 'content-type': 'application/octet-stream', 'content-range': '20000-49999' },
      });
      assert.equal(done.status, 201, await done.clone().text());

      const config = await pushBlob('push/sha512', Buffer.from('{}'), 'sha512');
      const manifest = Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: ociManifest,
          artifactType: 'application/x-sha512',
          config: { mediaType: emptyType, ...config },
          layers: [{ mediaType: 'application/octet-stream', ...mono }],
        }),
      );
      const put = await putManifest('push/sha512', digestOf(manifest, 'sha512'), manifest);
      assert.equal(put.status, 201, await put.clone().text());
      assert.equal(put.headers.get('docker-content-digest'), digestOf(manifest, 'sha512'));
      const get = await fetch(`${url}/v2/push/sha512/manifests/${digestOf(manifest, 'sha512')}`);
      assert.ok(Buffer.from(await get.arrayBuffer()).equals(manifest));

      const md5 = await fetch(`${url}/v2/push/sha512/blobs/md5:${'0'.repeat(32)}`);
      assert.equal(md5.status, 400);
      assert.equal(await codeOf(md5), 'DIGEST_INVALID');
      const upload = await fetch(`${url}/v2/push/sha512/blobs/uploads/?digest=sha1:${'0'.repeat(40)}`, {
        method: 'POST',
        body: 'x',
      });
      assert.equal(upload.status, 400);
      assert.equal(await codeOf(upload), 'DIGEST_INVALID');
    });

    it('indexes: kept whole with children pushed before or after, nested and empty; re-tagging moves the tag', async () => {
      const child = await artifact('push/index', 'child', 'text/x-child');
      const late = await artifact('push/index', 'late', 'text/x-late');
      assert.equal((await putManifest('push/index', child.digest, child.body)).status, 201);
      const index = Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: ociIndex,
          manifests: [
            {
              mediaType: ociManifest,
              digest: child.digest,
              size: child.size,
              platform: { os: 'linux', architecture: 's390x' },
            },
            { mediaType: ociManifest, digest: late.digest, size: late.size },
          ],
        }),
      );
      assert.equal(
        (await putManifest('push/index', 'multi', index, ociIndex)).status,
        201,
        'a child may come after',
      );
      assert.equal((await putManifest('push/index', late.digest, late.body)).status, 201);
      const nested = Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: ociIndex,
          manifests: [{ mediaType: ociIndex, digest: digestOf(index), size: index.length }],
        }),
      );
      const empty = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: ociIndex, manifests: [] }));
      assert.equal((await putManifest('push/index', 'nested', nested, ociIndex)).status, 201);
      assert.equal((await putManifest('push/index', 'empty', empty, ociIndex)).status, 201);
      for (const [tag, bytes] of [
        ['multi', index],
        ['nested', nested],
        ['empty', empty],
      ] as const) {
        const get = await fetch(`${url}/v2/push/index/manifests/${tag}`);
        assert.equal(get.headers.get('content-type'), ociIndex);
        assert.ok(Buffer.from(await get.arrayBuffer()).equals(bytes), tag);
      }
      assert.equal((await putManifest('push/index', 'multi', empty, ociIndex)).status, 201);
      const moved = await fetch(`${url}/v2/push/index/manifests/multi`, { method: 'HEAD' });
      assert.equal(moved.headers.get('docker-content-digest'), digestOf(empty), 're-tagging moves the tag');
      const old = await fetch(`${url}/v2/push/index/manifests/${digestOf(index)}`, { method: 'HEAD' });
      assert.equal(old.status, 200, 'the untagged index stays by digest');
    });

    it('artifacts: any config type, artifactType, unknown fields and foreign layers with urls', async () => {
      const { body, digest } = await artifact('push/artifact', 'sbom', 'application/spdx+json');
      const put = await putManifest('push/artifact', 'sbom', body);
      assert.equal(put.status, 201, await put.clone().text());
      const get = await fetch(`${url}/v2/push/artifact/manifests/${digest}`);
      assert.ok(Buffer.from(await get.arrayBuffer()).equals(body), 'unknown fields kept byte for byte');
      await assert.rejects(
        openImageStore(serverDir).resolve('push/artifact:sbom'),
        /artifact of type application\/spdx\+json, not an image/,
      );

      const config = await pushBlob(
        'push/artifact',
        Buffer.from('{"architecture":"amd64","os":"windows","rootfs":{"type":"layers","diff_ids":[]}}'),
      );
      const foreign = Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: ociManifest,
          config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
          layers: [
            {
              mediaType: 'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip',
              digest: digestOf(Buffer.from('never pushed')),
              size: 12,
              urls: ['https://example.com/layer'],
            },
          ],
        }),
      );
      const foreignPut = await putManifest('push/artifact', digestOf(foreign), foreign);
      assert.equal(foreignPut.status, 201, await foreignPut.clone().text());
    });
  });

  describe('content discovery', () => {
    it('referrers: OCI-Subject on push, the index of referrers, the artifactType filter, an unknown subject', async () => {
      const repo = 'discover/refs';
      const subject = await artifact(repo, 'the subject', 'text/x-subject');
      assert.equal((await putManifest(repo, 'v1', subject.body)).status, 201);
      const signature = await artifact(repo, 'signed', 'application/vnd.example.signature', subject);
      const sbom = await artifact(repo, 'sbom', 'application/spdx+json', subject);
      for (const referrer of [signature, sbom]) {
        const put = await putManifest(repo, referrer.digest, referrer.body);
        assert.equal(put.status, 201);
        assert.equal(put.headers.get('oci-subject'), subject.digest);
      }
      const all = await fetch(`${url}/v2/${repo}/referrers/${subject.digest}`);
      assert.equal(all.status, 200);
      assert.equal(all.headers.get('content-type'), ociIndex);
      const listed = (await all.json()) as {
        mediaType: string;
        manifests: { digest: string; artifactType: string; size: number }[];
      };
      assert.equal(listed.mediaType, ociIndex);
      assert.deepEqual(
        listed.manifests.map((m) => [m.digest, m.artifactType, m.size]).sort(),
        [
          [signature.digest, 'application/vnd.example.signature', signature.size],
          [sbom.digest, 'application/spdx+json', sbom.size],
        ].sort(),
      );
      const filtered = await fetch(
        `${url}/v2/${repo}/referrers/${subject.digest}?artifactType=application/spdx%2Bjson`,
      );
      assert.equal(filtered.headers.get('oci-filters-applied'), 'artifactType');
      assert.deepEqual(
        ((await filtered.json()) as typeof listed).manifests.map((m) => m.digest),
        [sbom.digest],
      );
      const none = await fetch(`${url}/v2/${repo}/referrers/${digestOf(Buffer.from('no such subject'))}`);
      assert.equal(none.status, 200);
      assert.deepEqual(((await none.json()) as typeof listed).manifests, []);
      const bad = await fetch(`${url}/v2/${repo}/referrers/sha256:nothex`);
      assert.equal(bad.status, 400);
      assert.equal(await codeOf(bad), 'DIGEST_INVALID');
    });

    it('tags list and pagination: refused pushes add no tag', async () => {
      const repo = 'discover/tags';
      const { body } = await artifact(repo, 'tagged', 'text/x-tagged');
      for (const tag of ['c', 'a', 'b']) assert.equal((await putManifest(repo, tag, body)).status, 201);
      assert.equal((await putManifest(repo, 'refused', '{not json')).status, 400);
      const page = await fetch(`${url}/v2/${repo}/tags/list?n=2`);
      assert.deepEqual(await page.json(), { name: repo, tags: ['a', 'b'] });
      assert.equal(page.headers.get('link'), `</v2/${repo}/tags/list?n=2&last=b>; rel="next"`);
      const rest = await fetch(`${url}/v2/${repo}/tags/list?n=2&last=b`);
      assert.deepEqual(await rest.json(), { name: repo, tags: ['c'] });
    });
  });

  describe('content management', () => {
    it('DELETE of a tag, a manifest by digest (with its tags) and a blob answer 202; gc then frees the bytes', async () => {
      const repo = 'manage/delete';
      const { body, digest } = await artifact(
        repo,
        `to delete ${randomBytes(8).toString('hex')}`,
        'text/x-delete',
      );
      const layerDigest =
        (JSON.parse(body.toString()) as { layers: { digest: string }[] }).layers[0]?.digest ?? '';
      assert.equal((await putManifest(repo, 'one', body)).status, 201);
      assert.equal((await putManifest(repo, 'two', body)).status, 201);
      let response = await fetch(`${url}/v2/${repo}/manifests/one`, { method: 'DELETE' });
      assert.equal(response.status, 202);
      assert.equal((await fetch(`${url}/v2/${repo}/manifests/one`)).status, 404);
      assert.equal((await fetch(`${url}/v2/${repo}/manifests/two`)).status, 200, 'other tags stay');
      response = await fetch(`${url}/v2/${repo}/manifests/${digest}`, { method: 'DELETE' });
      assert.equal(response.status, 202);
      assert.equal((await fetch(`${url}/v2/${repo}/manifests/${digest}`)).status, 404);
      assert.equal((await fetch(`${url}/v2/${repo}/manifests/two`)).status, 404, 'its tags went with it');
      assert.deepEqual(await (await fetch(`${url}/v2/${repo}/tags/list`)).json(), { name: repo, tags: [] });
      response = await fetch(`${url}/v2/${repo}/manifests/${digest}`, { method: 'DELETE' });
      assert.equal(response.status, 404);
      assert.equal(await codeOf(response), 'MANIFEST_UNKNOWN');

      response = await fetch(`${url}/v2/${repo}/blobs/${layerDigest}`, { method: 'DELETE' });
      assert.equal(response.status, 202);
      assert.equal((await fetch(`${url}/v2/${repo}/blobs/${layerDigest}`)).status, 404);
      const stray = randomBytes(32);
      await pushBlob('manage/stray-a', stray);
      const store = openImageStore(serverDir);
      assert.ok(store.hasBlob(layerDigest), 'the bytes wait for gc');
      const gc = await store.gc({ pendingGraceMs: 0 });
      assert.equal(gc.ran, true);
      assert.equal(store.hasBlob(layerDigest), false, 'gc freed the unreferenced layer');
      assert.equal(store.hasBlob(digest), false, 'and the deleted manifest');
      await pushBlob('manage/stray-b', stray);
      assert.equal(
        (await fetch(`${url}/v2/manage/stray-a/blobs/${digestOf(stray)}`)).status,
        404,
        'a link whose blob gc freed is gone: the same bytes pushed elsewhere are not readable here again',
      );
    });

    it('gc keeps what a pushed manifest references and, in the grace period, a blob whose manifest has not come', async () => {
      const repo = 'manage/gc';
      const { body, digest } = await artifact(repo, `kept ${randomBytes(8).toString('hex')}`, 'text/x-kept');
      assert.equal((await putManifest(repo, 'v1', body)).status, 201);
      const pending = await pushBlob(repo, randomBytes(64));
      const store = openImageStore(serverDir);
      const gc = await store.gc();
      assert.equal(gc.ran, true);
      assert.ok(store.hasBlob(digest));
      for (const d of (JSON.parse(body.toString()) as { layers: { digest: string }[] }).layers) {
        assert.ok(store.hasBlob(d.digest));
      }
      assert.ok(
        store.hasBlob(pending.digest),
        'an upload without its manifest yet is kept for the grace period',
      );
    });
  });

  describe('bad input: the spec error code, nothing half stored', () => {
    it('malformed JSON, a wrong digest, a wrong size, a missing blob, a huge manifest', async () => {
      const repo = 'bad/input';
      const blob = await pushBlob(repo, Buffer.from('{}'));
      const manifestOf = (config: object, layers: object[] = []) =>
        JSON.stringify({
          schemaVersion: 2,
          mediaType: ociManifest,
          config: { mediaType: emptyType, ...config },
          layers,
        });
      const cases: [string, Response, number, string][] = [
        ['malformed JSON', await putManifest(repo, 'json', '{"schemaVersion": 2,'), 400, 'MANIFEST_INVALID'],
        [
          'not schemaVersion 2',
          await putManifest(repo, 'v1', JSON.stringify({ schemaVersion: 1 })),
          400,
          'MANIFEST_INVALID',
        ],
        [
          'wrong size',
          await putManifest(repo, 'size', manifestOf({ ...blob, size: 3 })),
          400,
          'MANIFEST_INVALID',
        ],
        [
          'missing blob',
          await putManifest(
            repo,
            'missing',
            manifestOf(blob, [{ mediaType: 'text/plain', digest: digestOf(Buffer.from('gone')), size: 4 }]),
          ),
          400,
          'MANIFEST_BLOB_UNKNOWN',
        ],
        [
          'wrong digest',
          await putManifest(repo, digestOf(Buffer.from('other')), manifestOf(blob)),
          400,
          'DIGEST_INVALID',
        ],
        [
          'bad descriptor digest',
          await putManifest(repo, 'desc', manifestOf({ digest: 'sha256:zz', size: 2 })),
          400,
          'DIGEST_INVALID',
        ],
        [
          'huge',
          await putManifest(repo, 'huge', Buffer.alloc(4 * 1024 * 1024 + 1, 32)),
          413,
          'MANIFEST_INVALID',
        ],
        [
          'type mismatch',
          await putManifest(repo, 'type', manifestOf(blob), dockerManifest),
          400,
          'MANIFEST_INVALID',
        ],
      ];
      for (const [what, response, status, code] of cases) {
        assert.equal(response.status, status, what);
        assert.equal(await codeOf(response), code, what);
      }
      const tags = await fetch(`${url}/v2/${repo}/tags/list`);
      assert.equal(tags.status, 404, 'no refused push made the repository exist');
    });

    it('a wrong-size final chunk and a gap on the final PUT: 416, the upload keeps what it had', async () => {
      const data = randomBytes(30_000);
      const start = await fetch(`${url}/v2/bad/upload/blobs/uploads/`, { method: 'POST' });
      const location = start.headers.get('location') ?? '';
      const first = await fetch(`${url}${location}`, {
        method: 'PATCH',
        body: data.subarray(0, 10_000),
        headers: { 'content-type': 'application/octet-stream', 'content-range': '0-9999' },
      });
      assert.equal(first.status, 202);
      const gap = await fetch(`${url}${location}?digest=${digestOf(data)}`, {
        method: 'PUT',
        body: data.subarray(20_000),
        headers: { 'content-type': 'application/octet-stream', 'content-range': '20000-29999' },
      });
      assert.equal(gap.status, 416);
      assert.equal(gap.headers.get('range'), '0-9999');
      const status = await fetch(`${url}${location}`);
      assert.equal(status.status, 204);
      assert.equal(status.headers.get('range'), '0-9999');
      const cancel = await fetch(`${url}${location}`, { method: 'DELETE' });
      assert.equal(cancel.status, 204);
      assert.equal((await fetch(`${url}${location}`)).status, 404, 'a cancelled upload is gone');
    });

    it('a truncated monolithic upload (the client hangs up) stores nothing', async () => {
      const data = randomBytes(100_000);
      const digest = digestOf(data);
      const port = new URL(url).port;
      const uploads = join(serverDir, 'images', 'uploads');
      const before = readdirSync(uploads).sort();
      // Wait for the server to see the request end (not just our side of the socket).
      const serverSaw = new Promise<void>((resolve) => {
        const onRequest = (request: import('node:http').IncomingMessage) => {
          if (!request.url?.includes('/bad/truncated/')) return;
          app.server.off('request', onRequest);
          request.on('close', () => resolve());
        };
        app.server.on('request', onRequest);
      });
      await new Promise<void>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1', () => {
          socket.write(
            `POST /v2/bad/truncated/blobs/uploads/?digest=${digest} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${data.length}\r\n\r\n`,
          );
          socket.write(data.subarray(0, 40_000), () => socket.destroy());
        });
        socket.on('close', () => resolve());
        socket.on('error', reject);
      });
      await serverSaw;
      // The handler cleans up after the hang-up asynchronously: wait until the upload is gone.
      const settled = () => readdirSync(uploads).sort().join() === before.join();
      for (let i = 0; i < 100 && !settled(); i++) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(readdirSync(uploads).sort(), before, 'the truncated upload was deleted');
      assert.equal((await fetch(`${url}/v2/bad/truncated/blobs/${digest}`, { method: 'HEAD' })).status, 404);
      assert.equal(openImageStore(serverDir).hasBlob(digest), false);
    });
  });
});
