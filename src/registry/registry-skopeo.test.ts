import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { openImageStore } from '../runtime/image/index.js';
import { makeBusyboxRootfs } from '../testing/busybox-rootfs.js';
import { tarBytes, writeOciLayout } from '../testing/oci-fixture-builder.js';
import { startRegistry } from '../testing/registry-test-server.js';
import { hostArchitecture } from './image-transfer.js';

/**
 * skopeo talks to a registry served by this very process: it must run asynchronously, or the
 * blocked event loop never answers it.
 */
const skopeo = async (args: readonly string[]): Promise<string> =>
  (await promisify(execFile)('skopeo', [...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })).stdout;

const hasSkopeo = spawnSync('skopeo', ['--version'], { stdio: 'ignore' }).status === 0;

/** Every file of an OCI layout (or unpacked oci-archive), path → bytes. */
function files(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const name of readdirSync(join(dir, 'blobs', 'sha256'))) {
    out.set(name, readFileSync(join(dir, 'blobs', 'sha256', name)));
  }
  return out;
}

/**
 * Real client interop: Debian's skopeo (containers/image, the library podman uses) pushes an
 * oci-archive to the registry and pulls it back; every blob and the manifest come back
 * byte-identical, and the pushed image is in the store ready to run.
 */
describe('skopeo against the registry', { skip: hasSkopeo ? false : 'skopeo is not installed' }, () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-registry-skopeo-'));
  const serverDir = join(scratch, 'server');
  let app: FastifyInstance;
  let host = '';
  const archive = join(scratch, 'busybox.tar');
  const layout = join(scratch, 'layout');
  let manifestDigest = '';
  let configDigest = '';

  before(async () => {
    const started = await startRegistry(serverDir);
    app = started.app;
    host = new URL(started.url).host;
    const seed = openImageStore(join(scratch, 'seed'));
    await seed.importRootfs(makeBusyboxRootfs(join(scratch, 'rootfs')), 'seed');
    const resolved = await seed.resolve('seed');
    const manifest = JSON.parse(readFileSync(seed.blobPath(resolved.manifestDigest), 'utf8')) as {
      layers: { digest: string }[];
    };
    const busyboxLayer = readFileSync(seed.blobPath(manifest.layers[0]?.digest ?? ''));
    const upper = await tarBytes([{ name: 'etc/motd', body: 'via skopeo\n' }]);
    mkdirSync(layout);
    ({ manifestDigest, configDigest } = writeOciLayout(layout, {
      layers: [busyboxLayer, upper],
      config: { Cmd: ['/bin/cat', '/etc/motd'] },
    }));
    execFileSync('skopeo', ['copy', '--quiet', `oci:${layout}`, `oci-archive:${archive}`], { stdio: 'pipe' });
  });
  after(async () => {
    await app.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('skopeo copy oci-archive → docker://registry pushes; the image is tagged in the store', async () => {
    await skopeo([
      'copy',
      '--quiet',
      '--dest-tls-verify=false',
      `oci-archive:${archive}`,
      `docker://${host}/library/busybox:1.36`,
    ]);
    const store = openImageStore(serverDir);
    const image = store.list().find((i) => i.names.includes('library/busybox:1.36'));
    assert.ok(image, 'visible as library/busybox:1.36');
    assert.equal(image.id, configDigest);
    assert.equal(image.manifestDigest, manifestDigest, 'the manifest is stored as pushed');
    const tags = await skopeo(['list-tags', '--tls-verify=false', `docker://${host}/library/busybox`]);
    assert.deepEqual((JSON.parse(tags) as { Tags: string[] }).Tags, ['1.36']);
  });

  it('skopeo copy docker://registry → oci-archive pulls it back byte-identical', async () => {
    const out = join(scratch, 'pulled.tar');
    await skopeo([
      'copy',
      '--quiet',
      '--src-tls-verify=false',
      `docker://${host}/library/busybox:1.36`,
      `oci-archive:${out}`,
    ]);
    const unpacked = join(scratch, 'pulled');
    mkdirSync(unpacked);
    execFileSync('tar', ['-xf', out, '-C', unpacked]);
    const original = files(layout);
    const pulled = files(unpacked);
    assert.deepEqual([...pulled.keys()].sort(), [...original.keys()].sort());
    for (const [name, bytes] of original)
      assert.ok(pulled.get(name)?.equals(bytes), `blob ${name} is identical`);
    const index = JSON.parse(readFileSync(join(unpacked, 'index.json'), 'utf8')) as {
      manifests: { digest: string }[];
    };
    assert.equal(index.manifests[0]?.digest, manifestDigest);
  });

  it('skopeo inspect reads the config through the registry', async () => {
    const text = await skopeo([
      'inspect',
      '--tls-verify=false',
      '--config',
      `docker://${host}/library/busybox:1.36`,
    ]);
    const config = JSON.parse(text) as { config: { Cmd: string[] } };
    assert.deepEqual(config.config.Cmd, ['/bin/cat', '/etc/motd']);
  });

  it("skopeo copy --all of a multi-platform index: kept whole, digests unchanged both ways; the tag runs this host's image", async () => {
    const seedManifest = (await openImageStore(join(scratch, 'seed')).resolve('seed')).manifestDigest;
    const seedLayer = (
      JSON.parse(readFileSync(openImageStore(join(scratch, 'seed')).blobPath(seedManifest), 'utf8')) as {
        layers: { digest: string }[];
      }
    ).layers[0]?.digest;
    const layer = readFileSync(openImageStore(join(scratch, 'seed')).blobPath(seedLayer ?? ''));
    const arch = hostArchitecture();
    const other = arch === 'arm64' ? 'amd64' : 'arm64';
    const multi = join(scratch, 'multi');
    mkdirSync(multi);
    // gzip'd: skopeo would compress an uncompressed layer on its way to a registry (new digests).
    writeOciLayout(multi, { layers: [layer], platforms: [`linux/${other}`, `linux/${arch}`] });
    await skopeo([
      'copy',
      '--quiet',
      '--all',
      '--dest-tls-verify=false',
      `oci:${multi}`,
      `docker://${host}/multi/busybox:1`,
    ]);
    const store = openImageStore(serverDir);
    const image = store.list().find((i) => i.names.includes('multi/busybox:1'));
    assert.ok(image, 'the tag is in the store');
    const config = JSON.parse(readFileSync(store.blobPath(image.id), 'utf8')) as { architecture: string };
    assert.equal(config.architecture, arch, 'the tag names the image for this host');

    // The index itself is kept whole: copied back out with --all, every digest is unchanged.
    const back = join(scratch, 'multi-back');
    await skopeo([
      'copy',
      '--quiet',
      '--all',
      '--src-tls-verify=false',
      `docker://${host}/multi/busybox:1`,
      `oci:${back}`,
    ]);
    const pushedIndex = JSON.parse(readFileSync(join(multi, 'index.json'), 'utf8')) as {
      manifests: { digest: string }[];
    };
    const original = files(multi);
    const copied = files(back);
    for (const [name, bytes] of original)
      assert.ok(copied.get(name)?.equals(bytes), `blob ${name} is identical`);
    assert.deepEqual([...copied.keys()].sort(), [...original.keys()].sort(), 'the same blobs came back');
    const backIndex = JSON.parse(readFileSync(join(back, 'index.json'), 'utf8')) as {
      manifests: { digest: string }[];
    };
    const served = await fetch(`http://${host}/v2/multi/busybox/manifests/1`);
    assert.equal(served.headers.get('content-type'), 'application/vnd.oci.image.index.v1+json');
    const indexDigest = pushedIndex.manifests[0]?.digest ?? '';
    assert.equal(served.headers.get('docker-content-digest'), indexDigest, 'the tag serves the pushed index');
    assert.ok(
      Buffer.from(await served.arrayBuffer()).equals(original.get(indexDigest.slice(7)) ?? Buffer.alloc(0)),
      'byte for byte',
    );
    assert.deepEqual(
      backIndex.manifests.map((m) => m.digest),
      [indexDigest],
    );

    // An index without this host's platform is stored and served, but names no runnable image.
    const foreign = join(scratch, 'foreign');
    mkdirSync(foreign);
    writeOciLayout(foreign, { layers: [layer], gzip: false, platforms: ['linux/s390x', 'linux/riscv64'] });
    await skopeo([
      'copy',
      '--quiet',
      '--all',
      '--dest-tls-verify=false',
      `oci:${foreign}`,
      `docker://${host}/foreign/busybox:1`,
    ]);
    const head = await fetch(`http://${host}/v2/foreign/busybox/manifests/1`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'application/vnd.oci.image.index.v1+json');
    assert.ok(
      !openImageStore(serverDir)
        .list()
        .some((i) => i.names.includes('foreign/busybox:1')),
    );
    await assert.rejects(openImageStore(serverDir).resolve('foreign/busybox:1'), (err: Error) =>
      new RegExp(`image index with no linux/${arch} image.*linux/s390x, linux/riscv64`).test(err.message),
    );
  });
  it('skopeo copies an artifact (empty config, artifactType, subject) in and back out with its digest unchanged', async () => {
    const dir = join(scratch, 'artifact');
    mkdirSync(join(dir, 'blobs', 'sha256'), { recursive: true });
    const blob = (bytes: Buffer) => {
      const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
      writeFileSync(join(dir, 'blobs', 'sha256', digest.slice(7)), bytes);
      return { digest, size: bytes.length };
    };
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        artifactType: 'application/vnd.example.sbom',
        config: { mediaType: 'application/vnd.oci.empty.v1+json', ...blob(Buffer.from('{}')) },
        layers: [
          {
            mediaType: 'application/vnd.oci.image.layer.v1.tar',
            ...blob(await tarBytes([{ name: 'sbom.json', body: '{"packages":[]}' }])),
          },
        ],
        subject: { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: manifestDigest, size: 1 },
        annotations: { 'org.example.kept': 'yes' },
      }),
    );
    const pushed = blob(manifest);
    writeFileSync(
      join(dir, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...pushed }],
      }),
    );
    writeFileSync(join(dir, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
    await skopeo(['copy', '--quiet', '--dest-tls-verify=false', `oci:${dir}`, `docker://${host}/art/sbom:1`]);
    const served = await fetch(`http://${host}/v2/art/sbom/manifests/1`);
    assert.equal(served.headers.get('docker-content-digest'), pushed.digest);
    assert.ok(Buffer.from(await served.arrayBuffer()).equals(manifest), 'served byte for byte');
    const back = join(scratch, 'artifact-back');
    await skopeo(['copy', '--quiet', '--src-tls-verify=false', `docker://${host}/art/sbom:1`, `oci:${back}`]);
    const original = files(dir);
    const copied = files(back);
    assert.deepEqual([...copied.keys()].sort(), [...original.keys()].sort());
    for (const [name, bytes] of original)
      assert.ok(copied.get(name)?.equals(bytes), `blob ${name} is identical`);
    await assert.rejects(
      openImageStore(serverDir).resolve('art/sbom:1'),
      /artifact of type application\/vnd\.example\.sbom/,
    );
  });
});
