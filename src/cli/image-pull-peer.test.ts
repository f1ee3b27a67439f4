import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { hostArchitecture, RegistryClient } from '../registry/index.js';
import { openImageStore } from '../runtime/image/index.js';
import { runBerth } from '../testing/berth-cli.js';
import { makeBusyboxRootfs } from '../testing/busybox-rootfs.js';
import { tarBytes, writeOciLayout } from '../testing/oci-fixture-builder.js';
import {
  hasReferenceRegistry,
  type ReferenceRegistry,
  startReferenceRegistry,
} from '../testing/reference-registry.js';
import { startRegistry } from '../testing/registry-test-server.js';

const canRun = process.getuid?.() === 0 ? false : 'runc needs root';

/** Asynchronous: the berth registry of one test is served by this very process. */
async function skopeo(args: readonly string[]): Promise<Buffer> {
  const run = promisify(execFile);
  return (await run('skopeo', [...args], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 })).stdout;
}

const digestOf = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/**
 * `berth image pull` from another registry: the reference implementation (Debian's
 * docker-registry, CNCF distribution), started here on an ephemeral port. skopeo pushes an image
 * and a multi-platform index (amd64 + arm64 children built here) to it; berth pulls by tag and by
 * digest, takes the host's platform (or --platform's), refuses a platform the index lacks and an
 * artifact, and the pulled image runs. skopeo copies between berth's registry and the reference
 * one both ways with every digest unchanged.
 */
describe('berth image pull from the reference registry', {
  skip: hasReferenceRegistry ? false : 'docker-registry is not installed (scripts/setup installs it)',
}, () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-pull-peer-'));
  let reference: ReferenceRegistry;
  let berth: FastifyInstance;
  let berthHost = '';
  let indexDigest = '';
  const arch = hostArchitecture();
  const other = arch === 'arm64' ? 'amd64' : 'arm64';
  let layer = Buffer.alloc(0);

  before(async () => {
    reference = await startReferenceRegistry(join(scratch, 'reference'));
    const started = await startRegistry(join(scratch, 'berth-server'));
    berth = started.app;
    berthHost = new URL(started.url).host;
    const seed = openImageStore(join(scratch, 'seed'));
    await seed.importRootfs(makeBusyboxRootfs(join(scratch, 'rootfs')), 'seed');
    const manifest = JSON.parse(
      readFileSync(seed.blobPath((await seed.resolve('seed')).manifestDigest), 'utf8'),
    ) as { layers: { digest: string }[] };
    layer = readFileSync(seed.blobPath(manifest.layers[0]?.digest ?? ''));
    // One busybox layer under both children; the arm64 child's config claims arm64.
    const multi = join(scratch, 'multi');
    mkdirSync(multi);
    writeOciLayout(multi, {
      layers: [layer, await tarBytes([{ name: 'etc/platform', body: 'multi\n' }])],
      gzip: false,
      platforms: [`linux/${other}`, `linux/${arch}`],
      config: { Cmd: ['/bin/cat', '/etc/platform'] },
    });
    await skopeo([
      'copy',
      '--quiet',
      '--all',
      '--dest-tls-verify=false',
      `oci:${multi}`,
      `docker://${reference.host}/multi/busybox:1`,
    ]);
    // The index as the registry holds it (skopeo may re-encode what it copies), by its digest.
    const index = await skopeo([
      'inspect',
      '--raw',
      '--tls-verify=false',
      `docker://${reference.host}/multi/busybox:1`,
    ]);
    assert.match(index.toString(), /"architecture":"arm64"/);
    indexDigest = digestOf(index);
    const single = join(scratch, 'single');
    mkdirSync(single);
    writeOciLayout(single, { layers: [layer], gzip: true });
    await skopeo([
      'copy',
      '--quiet',
      '--format',
      'v2s2',
      '--dest-tls-verify=false',
      `oci:${single}`,
      `docker://${reference.host}/library/busybox:1.36`,
    ]);
  });
  after(async () => {
    await reference?.stop();
    await berth?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('pulls a Docker v2s2 image by tag into the store under the full reference', async () => {
    const dir = join(scratch, 'by-tag');
    const r = await runBerth(['image', 'pull', '--dir', dir, `${reference.host}/library/busybox:1.36`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `Pulled ${reference.host}/library/busybox:1.36 \\(sha256:[a-f0-9]{64}\\) from http://${reference.host}: 2 blobs`,
      ),
    );
    const image = openImageStore(dir).list()[0];
    assert.deepEqual(image?.names, [`${reference.host}/library/busybox:1.36`]);
    assert.equal(`${image?.id}\n`, r.stdout);
    const raw = await skopeo([
      'inspect',
      '--raw',
      '--tls-verify=false',
      `docker://${reference.host}/library/busybox:1.36`,
    ]);
    assert.equal(image?.manifestDigest, digestOf(raw), "the manifest digest is the registry's");
    assert.equal(
      openImageStore(dir).manifestByDigest(digestOf(raw))?.mediaType,
      'application/vnd.docker.distribution.manifest.v2+json',
    );
  });

  it("pulls the index by digest: the host platform's image, which runs", async () => {
    const dir = join(scratch, 'by-digest');
    const r = await runBerth([
      'image',
      'pull',
      '--dir',
      dir,
      `${reference.host}/multi/busybox@${indexDigest}`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const store = openImageStore(dir);
    const config = JSON.parse(readFileSync(store.blobPath(r.stdout.trim()), 'utf8')) as {
      architecture: string;
    };
    assert.equal(config.architecture, arch);
    const run = await runBerth(['run', '--rm', '--dir', dir, r.stdout.trim()]);
    if (canRun === false) {
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, 'multi\n');
    }
  });

  it('--platform takes another child; a platform the index lacks is a clear error', async () => {
    const dir = join(scratch, 'platforms');
    const r = await runBerth([
      'image',
      'pull',
      '--dir',
      dir,
      '--platform',
      `linux/${other}`,
      `${reference.host}/multi/busybox:1`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const config = JSON.parse(readFileSync(openImageStore(dir).blobPath(r.stdout.trim()), 'utf8')) as {
      architecture: string;
    };
    assert.equal(config.architecture, other);
    const missing = await runBerth([
      'image',
      'pull',
      '--dir',
      join(scratch, 'none'),
      '--platform',
      'linux/s390x',
      `${reference.host}/multi/busybox:1`,
    ]);
    assert.notEqual(missing.code, 0);
    const offered = [other, arch].map((a) => `linux/${a}`).join(', ');
    assert.match(missing.stderr, new RegExp(`has no image for linux/s390x \\(it has ${offered}\\)`));
    assert.deepEqual(
      openImageStore(join(scratch, 'none')).list(),
      [],
      'nothing of another platform is stored',
    );
  });

  it('an artifact is pulled as what it is: not a runnable image', async () => {
    const client = new RegistryClient({ serverUrl: reference.url });
    const empty = Buffer.from('{}');
    const payload = Buffer.from('an SBOM\n');
    const files = join(scratch, 'artifact');
    mkdirSync(files);
    writeFileSync(join(files, 'empty'), empty);
    writeFileSync(join(files, 'payload'), payload);
    await client.pushBlob('sbom/app', digestOf(empty), join(files, 'empty'));
    await client.pushBlob('sbom/app', digestOf(payload), join(files, 'payload'));
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        artifactType: 'application/spdx+json',
        config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: digestOf(empty), size: 2 },
        layers: [{ mediaType: 'application/spdx+json', digest: digestOf(payload), size: payload.length }],
      }),
    );
    await client.putManifest('sbom/app', '1', manifest, 'application/vnd.oci.image.manifest.v1+json');
    const r = await runBerth([
      'image',
      'pull',
      '--dir',
      join(scratch, 'art'),
      `${reference.host}/sbom/app:1`,
    ]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /is not a runnable image: .*an artifact of type application\/spdx\+json/);
  });

  it('a digest the registry does not have is not found (exit 3), nothing stored', async () => {
    const wrong = `sha256:${'0'.repeat(64)}`;
    const r = await runBerth([
      'image',
      'pull',
      '--dir',
      join(scratch, 'wrong'),
      `${reference.host}/multi/busybox@${wrong}`,
    ]);
    assert.equal(r.code, 3, r.stderr);
    assert.deepEqual(openImageStore(join(scratch, 'wrong')).list(), []);
  });

  it('image push --as REGISTRY/NAME:TAG pushes there; berth run of that reference pulls and runs it', async () => {
    const ref = `${reference.host}/tools/seed:1`;
    const pushed = await runBerth(['image', 'push', 'seed', '--as', ref, '--dir', join(scratch, 'seed')]);
    assert.equal(pushed.code, 0, pushed.stderr);
    const raw = await skopeo(['inspect', '--raw', '--tls-verify=false', `docker://${ref}`]);
    assert.equal(pushed.stdout, `${digestOf(raw)}\n`);
    const dir = join(scratch, 'run-remote');
    const run = await runBerth([
      'run',
      '--rm',
      '--dir',
      dir,
      ref,
      '--',
      'echo',
      'from the reference registry',
    ]);
    if (canRun === false) {
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, 'from the reference registry\n');
      assert.deepEqual(openImageStore(dir).list()[0]?.names, [ref]);
    }
  });

  it('skopeo copies reference → berth → reference with every digest unchanged', async () => {
    const tls = ['--src-tls-verify=false', '--dest-tls-verify=false'];
    await skopeo([
      'copy',
      '--quiet',
      ...tls,
      `docker://${reference.host}/library/busybox:1.36`,
      `docker://${berthHost}/mirror/busybox:1.36`,
    ]);
    await skopeo([
      'copy',
      '--quiet',
      ...tls,
      `docker://${berthHost}/mirror/busybox:1.36`,
      `docker://${reference.host}/back/busybox:1.36`,
    ]);
    const inspect = async (ref: string) =>
      digestOf(await skopeo(['inspect', '--raw', '--tls-verify=false', `docker://${ref}`]));
    const original = await inspect(`${reference.host}/library/busybox:1.36`);
    assert.equal(await inspect(`${berthHost}/mirror/busybox:1.36`), original);
    assert.equal(await inspect(`${reference.host}/back/busybox:1.36`), original);
    const config = async (ref: string) =>
      (await skopeo(['inspect', '--config', '--raw', '--tls-verify=false', `docker://${ref}`])).toString();
    assert.equal(
      await config(`${reference.host}/back/busybox:1.36`),
      await config(`${reference.host}/library/busybox:1.36`),
    );
  });
});
