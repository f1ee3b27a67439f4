import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { BerthError, NotFoundError } from '../../core/index.js';
import { makeBusyboxRootfs } from '../../testing/busybox-rootfs.js';
import {
  dockerArchiveBytes,
  sha256,
  tarBytes,
  tarDirectory,
  writeOciLayout,
} from '../../testing/oci-fixture-builder.js';
import { openImageStore } from './index.js';

const scratch = mkdtempSync(join(tmpdir(), 'berth-store-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let counter = 0;

function fresh(name: string): string {
  counter += 1;
  const dir = join(scratch, `${name}-${counter}`);
  mkdirSync(dir);
  return dir;
}

function storeDir(): string {
  return fresh('data');
}

const hostCanary = `berth-store-escape-${process.pid}`;

/** Nothing visible and nothing stray: what a refused import must leave. */
function assertEmptyStore(data: string): void {
  const images = join(data, 'images');
  assert.deepEqual(readdirSync(join(images, 'records')), []);
  assert.deepEqual(readdirSync(join(images, 'rootfs')), []);
  assert.deepEqual(readdirSync(join(images, 'tmp')), []);
  assert.ok(
    !existsSync(join(images, 'names.json')) ||
      readFileSync(join(images, 'names.json'), 'utf8').trim() === '{}',
  );
  assert.ok(!existsSync(join(tmpdir(), hostCanary)));
}

const twoLayers = async () => [
  await tarBytes([
    { name: 'etc/', type: 'directory', mode: 0o755 },
    { name: 'etc/os-release', body: 'ID=fixture\n' },
    { name: 'etc/old', body: 'old' },
    { name: 'opt/lower', body: 'l' },
    { name: 'bin/tool', body: '#!/bin/sh\n', mode: 0o4755 },
  ]),
  await tarBytes([
    { name: 'etc/.wh.old', body: '' },
    { name: 'opt/.wh..wh..opq', body: '' },
    { name: 'opt/upper', body: 'u' },
  ]),
];

function assertTwoLayerRootfs(rootfs: string): void {
  assert.deepEqual(readdirSync(join(rootfs, 'etc')).sort(), ['os-release']);
  assert.deepEqual(readdirSync(join(rootfs, 'opt')), ['upper']);
  assert.equal(statSync(join(rootfs, 'bin/tool')).mode & 0o7777, 0o4755);
}

describe('ImageStore: import-rootfs and references', () => {
  it('imports zstd layers (through the zstd command), checked against their diff_ids', async () => {
    const layers = await twoLayers();
    const layout = fresh('zstd-layout');
    const { configDigest } = writeOciLayout(layout, {
      layers,
      layerMediaType: 'application/vnd.oci.image.layer.v1.tar+zstd',
      blobs: layers.map((layer) => execFileSync('zstd', ['-c', '-q'], { input: layer })),
    });
    const store = openImageStore(storeDir());
    const image = await store.importArchive(layout, { name: 'zstd:1' });
    assert.equal(image.id, configDigest);
    assertTwoLayerRootfs((await store.resolve('zstd:1')).rootfs);
  });

  const data = storeDir();
  const store = openImageStore(data);
  const rootfs = makeBusyboxRootfs(join(fresh('busybox'), 'rootfs'));
  let id = '';

  it('makes a one-layer image with Cmd /bin/sh and the default PATH', async () => {
    const image = await store.importRootfs(rootfs, 'busybox');
    id = image.id;
    assert.match(id, /^sha256:[a-f0-9]{64}$/);
    assert.deepEqual(image.names, ['busybox:latest']);
    const resolved = await store.resolve('busybox:latest');
    assert.deepEqual(resolved.config.Cmd, ['/bin/sh']);
    assert.deepEqual(resolved.config.Env, [
      'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    ]);
    assert.ok(statSync(join(resolved.rootfs, 'bin/busybox')).mode & 0o111);
    assert.equal(
      readFileSync(join(resolved.rootfs, 'etc/passwd'), 'utf8'),
      readFileSync(join(rootfs, 'etc/passwd'), 'utf8'),
    );
    assert.ok(store.hasBlob(resolved.manifestDigest));
    assert.ok(existsSync(store.blobPath(id)));
  });

  it('resolves by name, name without tag, full id, id prefix and sha256: prefix', async () => {
    const hex = id.slice(7);
    for (const ref of [
      'busybox',
      'busybox:latest',
      id,
      hex.slice(0, 4),
      hex.slice(0, 12),
      `sha256:${hex.slice(0, 8)}`,
    ]) {
      assert.equal((await store.resolve(ref)).id, id, ref);
    }
  });

  it('refuses unknown references with NotFoundError naming the ref', async () => {
    for (const ref of ['nope', 'busybox:2', 'sha256:0000', 'abc', `sha256:${'0'.repeat(64)}`]) {
      await assert.rejects(
        store.resolve(ref),
        (err: unknown) => err instanceof NotFoundError && err.message.includes(ref),
      );
    }
  });

  it('adds a second name by importing again, lists once, untags then deletes', async () => {
    const again = await store.importRootfs(rootfs, 'example.com/team/box:v1');
    const list = store.list();
    assert.equal(list.length, 2, 'a new import-rootfs is a new image (new created time)');
    const removed = await store.remove('example.com/team/box:v1');
    assert.deepEqual(removed, { untagged: ['example.com/team/box:v1'], deleted: again.id });
    assert.ok(!existsSync(join(data, 'images/rootfs', again.id.slice(7))));
    assert.equal(store.list().length, 1);
  });

  it('removing by id removes all names and sweeps unreferenced blobs', async () => {
    const resolved = await store.resolve('busybox');
    const result = await store.remove(id);
    assert.deepEqual(result, { untagged: ['busybox:latest'], deleted: id });
    assert.equal(store.hasBlob(resolved.manifestDigest), false);
    assert.deepEqual(readdirSync(join(data, 'images/blobs/sha256')), []);
    assertEmptyStore(data);
    await assert.rejects(store.remove('busybox'), NotFoundError);
  });

  it('refuses a bad --name', async () => {
    await assert.rejects(store.importRootfs(rootfs, 'Bad Name'), /Invalid --name "Bad Name"/);
    await assert.rejects(store.importRootfs(join(rootfs, 'nope'), 'x'), NotFoundError);
  });
});

describe('ImageStore: formats', () => {
  it('imports an OCI layout directory with gzip layers, whiteouts and opaque dirs', async () => {
    const data = storeDir();
    const layout = fresh('layout');
    const { configDigest, manifestDigest } = writeOciLayout(layout, {
      layers: await twoLayers(),
      config: { Entrypoint: ['/bin/tool'], WorkingDir: '/opt', User: '1000:1000', Env: ['A=1'] },
      refName: 'example.com/app:1.0',
    });
    const store = openImageStore(data);
    const image = await store.importArchive(layout);
    assert.equal(image.id, configDigest);
    assert.equal(image.manifestDigest, manifestDigest);
    assert.deepEqual(image.names, ['example.com/app:1.0']);
    const resolved = await store.resolve('example.com/app:1.0');
    assert.deepEqual(resolved.config, {
      Entrypoint: ['/bin/tool'],
      Cmd: ['/bin/sh'],
      Env: ['A=1'],
      WorkingDir: '/opt',
      User: '1000:1000',
    });
    assertTwoLayerRootfs(resolved.rootfs);
    assert.deepEqual(readdirSync(join(data, 'images/tmp')), []);
  });

  it('imports an oci-archive (tar of a layout) and a gzip of it; --name names it', async () => {
    const layout = fresh('layout');
    const { configDigest } = writeOciLayout(layout, { layers: await twoLayers(), refName: 'v1' });
    const archive = join(fresh('archive'), 'image.tar');
    writeFileSync(archive, await tarDirectory(layout));
    const store = openImageStore(storeDir());
    const plain = await store.importArchive(archive);
    assert.equal(plain.id, configDigest);
    assert.deepEqual(plain.names, [], 'a bare tag annotation names no repository');
    writeFileSync(`${archive}.gz`, gzipSync(readFileSync(archive)));
    const named = await store.importArchive(`${archive}.gz`, { name: 'app:v1' });
    assert.equal(named.id, configDigest);
    assert.deepEqual(named.names, ['app:v1']);
    assertTwoLayerRootfs((await store.resolve('app:v1')).rootfs);
  });

  it('picks linux/amd64 from a multi-platform index', async () => {
    const layout = fresh('layout');
    const { configDigest } = writeOciLayout(layout, {
      layers: await twoLayers(),
      platforms: ['linux/arm64', 'linux/amd64', 'linux/s390x'],
    });
    const image = await openImageStore(storeDir()).importArchive(layout, { name: 'multi' });
    assert.equal(image.id, configDigest);
  });

  it('imports a docker-archive (docker save layout, repeated layer as symlink), keeping RepoTags', async () => {
    const [lower, upper] = await twoLayers();
    assert.ok(lower && upper);
    const { bytes, configDigest } = await dockerArchiveBytes({
      layers: [lower, upper, upper],
      repoTags: ['docker.io/library/fixture:1', 'fixture:latest'],
      config: { Cmd: ['/bin/echo', 'hi'] },
    });
    const archive = join(fresh('archive'), 'docker.tar');
    writeFileSync(archive, bytes);
    const store = openImageStore(storeDir());
    const image = await store.importArchive(archive);
    assert.equal(image.id, configDigest);
    assert.deepEqual(image.names, ['docker.io/library/fixture:1', 'fixture:latest']);
    const resolved = await store.resolve('fixture');
    assert.deepEqual(resolved.config.Cmd, ['/bin/echo', 'hi']);
    assertTwoLayerRootfs(resolved.rootfs);
    assert.equal((await store.resolve('library/fixture:1')).id, image.id, 'short names match a full name');
    assert.ok(store.hasBlob(image.manifestDigest), 'a manifest is written for docker-archives');
    const again = await store.importArchive(archive, { name: 'fixture:again' });
    assert.equal(again.id, image.id);
    assert.equal(store.list().length, 1);
  });
});

describe('ImageStore: refused archives leave nothing behind', () => {
  async function refused(
    build: (dir: string) => Promise<string>,
    message: RegExp,
    code: BerthError['code'] = 'invalid_argument',
  ): Promise<void> {
    const data = storeDir();
    const input = await build(fresh('input'));
    await assert.rejects(openImageStore(data).importArchive(input), (err: unknown) => {
      assert.ok(err instanceof BerthError, String(err));
      assert.equal(err.code, code);
      assert.match(err.message, /^Cannot import "/);
      assert.match(err.message, message);
      return true;
    });
    assertEmptyStore(data);
  }

  it('a layer blob whose content does not match its digest', () =>
    refused(async (dir) => {
      writeOciLayout(dir, {
        layers: await twoLayers(),
        tamperLayer: (b) => Buffer.concat([b, Buffer.from('x')]),
      });
      return dir;
    }, /layer 1 \(sha256:[a-f0-9]{64}\) has digest sha256:[a-f0-9]{64}, not the sha256:/));

  it('a layer whose uncompressed digest is not its diff_id', () =>
    refused(async (dir) => {
      const layers = await twoLayers();
      writeOciLayout(dir, {
        layers,
        diffIds: [sha256(Buffer.from('other')), sha256(layers[1] ?? Buffer.alloc(0))],
      });
      return dir;
    }, /layer 1 .* uncompresses to sha256:[a-f0-9]{64}, not the diff_id/));

  it('a truncated gzip layer (blob digest honest, so extraction finds it)', () =>
    refused(async (dir) => {
      const layer = await tarBytes([{ name: 'big', body: Buffer.alloc(100_000, 7) }]);
      const gz = gzipSync(layer);
      writeOciLayout(dir, { layers: [layer], blobs: [gz.subarray(0, gz.length - 20)] });
      return dir;
    }, /layer 1 .* is truncated/));

  it('a truncated archive', () =>
    refused(async (dir) => {
      const layout = join(dir, 'layout');
      writeOciLayout(layout, { layers: await twoLayers() });
      const archive = join(dir, 'image.tar');
      writeFileSync(archive, await tarDirectory(layout));
      truncateSync(archive, statSync(archive).size - 3000);
      return archive;
    }, /truncated|has no file|digest/));

  it('a truncated gzip archive', () =>
    refused(async (dir) => {
      const layout = join(dir, 'layout');
      writeOciLayout(layout, { layers: await twoLayers() });
      const gz = gzipSync(await tarDirectory(layout));
      const archive = join(dir, 'image.tar.gz');
      writeFileSync(archive, gz.subarray(0, gz.length - 100));
      return archive;
    }, /the archive is truncated/));

  it('a file that is not an archive', () =>
    refused(async (dir) => {
      const file = join(dir, 'notes.txt');
      writeFileSync(file, 'just some text, not a tar archive at all\n'.repeat(40));
      return file;
    }, /not a tar archive/));

  it('an archive with neither manifest.json nor index.json', () =>
    refused(async (dir) => {
      const file = join(dir, 'other.tar');
      writeFileSync(file, await tarBytes([{ name: 'README', body: 'hi' }]));
      return file;
    }, /neither manifest\.json .* nor index\.json/));

  it('a zstd layer that is not a valid zstd stream (by media type and by its bytes)', () =>
    refused(async (dir) => {
      const layers = await twoLayers();
      writeOciLayout(dir, {
        layers,
        layerMediaType: 'application/vnd.oci.image.layer.v1.tar+zstd',
        blobs: layers.map(() => Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), Buffer.alloc(64)])),
      });
      return dir;
    }, /not a valid zstd stream \(zstd: /));

  it('zstd bytes in a docker-archive layer that zstd cannot read', () =>
    refused(async (dir) => {
      const zstd = Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), Buffer.alloc(64)]);
      const { bytes } = await dockerArchiveBytes({ layers: [zstd] });
      const file = join(dir, 'd.tar');
      writeFileSync(file, bytes);
      return file;
    }, /not a valid zstd stream/));

  it('an unknown layer media type', () =>
    refused(async (dir) => {
      writeOciLayout(dir, { layers: await twoLayers(), layerMediaType: 'application/x-made-up' });
      return dir;
    }, /unknown media type "application\/x-made-up"/));

  it('an archive entry climbing out with ".."', () =>
    refused(
      async (dir) => {
        const file = join(dir, 'evil.tar');
        writeFileSync(file, await tarBytes([{ name: `../../../tmp/${hostCanary}`, body: 'x' }]));
        return file;
      },
      new RegExp(`entry "\\.\\./\\.\\./\\.\\./tmp/${hostCanary}" climbs out`),
    ));

  for (const [label, entries, entry] of [
    ['a layer entry climbing out', [{ name: `../../${hostCanary}`, body: 'x' }], `../../${hostCanary}`],
    [
      'a layer hardlink to outside',
      [{ name: 'l', type: 'link' as const, linkname: '../../etc/passwd' }],
      'l',
    ],
  ] as const) {
    it(`${label}, in a docker-archive`, () =>
      refused(
        async (dir) => {
          const { bytes } = await dockerArchiveBytes({ layers: [await tarBytes([...entries])] });
          const file = join(dir, 'd.tar');
          writeFileSync(file, bytes);
          return file;
        },
        new RegExp(`entry "${entry.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`),
      ));
  }
});

describe('ImageStore: crashes and races', () => {
  it('a missing path is NotFound, naming it', async () => {
    await assert.rejects(
      openImageStore(storeDir()).importArchive('/nonexistent/berth.tar'),
      (err: unknown) => err instanceof NotFoundError && err.message.includes('/nonexistent/berth.tar'),
    );
  });

  it('the next import sweeps what a killed import left in tmp/', async () => {
    const data = storeDir();
    const store = openImageStore(data);
    mkdirSync(join(data, 'images/tmp/import-dead/rootfs'), { recursive: true });
    writeFileSync(join(data, 'images/tmp/blob-dead'), 'half');
    const layout = fresh('layout');
    writeOciLayout(layout, { layers: await twoLayers() });
    await store.importArchive(layout, { name: 'x' });
    assert.deepEqual(readdirSync(join(data, 'images/tmp')), []);
  });

  it('two processes importing the same archive at once: both succeed, one consistent image', async () => {
    const data = storeDir();
    const layout = fresh('layout');
    const busybox = makeBusyboxRootfs(join(fresh('bb'), 'rootfs'));
    const seed = openImageStore(storeDir());
    const made = await seed.importRootfs(busybox, 'seed');
    const layer = readFileSync(seed.blobPath((await seed.resolve('seed')).manifestDigest));
    const manifest = JSON.parse(layer.toString()) as { layers: { digest: string }[] };
    const layerTar = readFileSync(seed.blobPath(manifest.layers[0]?.digest ?? ''));
    const { configDigest } = writeOciLayout(layout, {
      layers: [layerTar, await tarBytes([{ name: 'extra', body: 'e' }])],
    });
    void made;
    const archive = join(fresh('archive'), 'image.tar');
    writeFileSync(archive, await tarDirectory(layout));
    const indexUrl = new URL('./index.js', import.meta.url).href;
    const script = `import(${JSON.stringify(indexUrl)}).then(async (m) => { const s = m.openImageStore(process.argv[1]); const r = await s.importArchive(process.argv[2], { name: process.argv[3] }); process.stdout.write(r.id); })`;
    const run = (name: string) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(process.execPath, ['-e', script, data, archive, name], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c;
        });
        child.stderr.on('data', (c: Buffer) => {
          err += c;
        });
        child.on('close', (code) => resolve({ code, out, err }));
      });
    const results = await Promise.all([run('race:a'), run('race:b'), run('race:c')]);
    for (const r of results) {
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out, configDigest);
    }
    const store = openImageStore(data);
    assert.equal(store.list().length, 1);
    assert.deepEqual(store.list()[0]?.names, ['race:a', 'race:b', 'race:c']);
    assert.deepEqual(readdirSync(join(data, 'images/rootfs')), [configDigest.slice(7)]);
    assert.deepEqual(readdirSync(join(data, 'images/tmp')), []);
    const resolved = await store.resolve('race:b');
    assert.ok(existsSync(join(resolved.rootfs, 'bin/busybox')));
    assert.ok(existsSync(join(resolved.rootfs, 'extra')));
  });

  it('kill -9 during an import: the image is either whole or absent, and the next import cleans up', async () => {
    const data = storeDir();
    const layout = fresh('layout');
    // Enough uncompressed data that the import is likely still running when it is killed; the
    // assertions hold either way.
    const big = await tarBytes(
      Array.from({ length: 8 }, (_, i) => ({ name: `data/${i}`, body: Buffer.alloc(8 * 1024 * 1024, i) })),
    );
    writeOciLayout(layout, { layers: [big] });
    const indexUrl = new URL('./index.js', import.meta.url).href;
    const script = `import(${JSON.stringify(indexUrl)}).then((m) => m.openImageStore(process.argv[1]).importArchive(process.argv[2], { name: 'victim' }))`;
    const child = spawn(process.execPath, ['-e', script, data, layout], { stdio: 'ignore' });
    const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
    const tmp = join(data, 'images/tmp');
    // Wait (by watching the filesystem, not a clock) until the import has its work dir.
    while (child.exitCode === null && !(existsSync(tmp) && readdirSync(tmp).length > 0)) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    child.kill('SIGKILL');
    await exited;
    const store = openImageStore(data);
    const names = store.list().flatMap((i) => i.names);
    if (names.includes('victim')) {
      assert.ok(existsSync(join((await store.resolve('victim')).rootfs, 'data/7')));
    } else {
      await assert.rejects(store.resolve('victim'), NotFoundError);
    }
    const small = fresh('layout');
    writeOciLayout(small, { layers: await twoLayers() });
    await store.importArchive(small, { name: 'next' });
    assert.deepEqual(readdirSync(tmp), []);
    const gc = await store.gc();
    assert.equal(gc.ran, true);
    assert.deepEqual(readdirSync(tmp), []);
  });
});
