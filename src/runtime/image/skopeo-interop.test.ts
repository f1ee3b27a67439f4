import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { makeBusyboxRootfs } from '../../testing/busybox-rootfs.js';
import { tarBytes, writeOciLayout } from '../../testing/oci-fixture-builder.js';
import { openImageStore } from './index.js';

const hasSkopeo = spawnSync('skopeo', ['--version'], { stdio: 'ignore' }).status === 0;

/**
 * Real interop: archives written by Debian's skopeo (containers/image, the library podman uses
 * for `podman save`) from an OCI layout berth's fixtures wrote, imported back into the store.
 */
describe('skopeo-written archives', { skip: hasSkopeo ? false : 'skopeo is not installed' }, () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-skopeo-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));
  const layout = join(scratch, 'layout');
  let configDigest = '';

  it('builds an OCI layout of busybox plus a layer with whiteouts', async () => {
    const seed = openImageStore(join(scratch, 'seed'));
    await seed.importRootfs(makeBusyboxRootfs(join(scratch, 'rootfs')), 'seed');
    const resolved = await seed.resolve('seed');
    const manifest = JSON.parse(readFileSync(seed.blobPath(resolved.manifestDigest), 'utf8')) as {
      layers: { digest: string }[];
    };
    const busyboxLayer = readFileSync(seed.blobPath(manifest.layers[0]?.digest ?? ''));
    const upper = await tarBytes([
      { name: 'etc/.wh.group', body: '' },
      { name: 'etc/motd', body: 'from skopeo\n' },
    ]);
    mkdirSync(layout);
    ({ configDigest } = writeOciLayout(layout, {
      layers: [busyboxLayer, upper],
      config: { Entrypoint: ['/bin/sh', '-c'], Cmd: ['echo hi'] },
    }));
    execFileSync('skopeo', ['inspect', `oci:${layout}`], { stdio: 'ignore' });
  });

  for (const format of ['docker-archive', 'oci-archive'] as const) {
    it(`imports a ${format} written by skopeo copy`, async () => {
      const file = join(scratch, `${format}.tar`);
      const destination =
        format === 'docker-archive' ? `${format}:${file}:skopeo/busybox:${format}` : `${format}:${file}`;
      execFileSync('skopeo', ['copy', '--quiet', `oci:${layout}`, destination], { stdio: 'pipe' });
      const store = openImageStore(join(scratch, `data-${format}`));
      const image = await store.importArchive(
        file,
        format === 'oci-archive' ? { name: 'skopeo/busybox:oci' } : {},
      );
      assert.equal(image.id, configDigest, 'the config blob (the image id) survives the round trip');
      // skopeo writes RepoTags fully qualified; the short name still resolves to it.
      const full =
        format === 'docker-archive' ? 'docker.io/skopeo/busybox:docker-archive' : 'skopeo/busybox:oci';
      assert.deepEqual(image.names, [full]);
      const name = format === 'docker-archive' ? 'skopeo/busybox:docker-archive' : 'skopeo/busybox:oci';
      const resolved = await store.resolve(name);
      assert.deepEqual(resolved.config.Entrypoint, ['/bin/sh', '-c']);
      assert.ok(existsSync(join(resolved.rootfs, 'bin/busybox')));
      assert.equal(readFileSync(join(resolved.rootfs, 'etc/motd'), 'utf8'), 'from skopeo\n');
      assert.ok(!existsSync(join(resolved.rootfs, 'etc/group')), 'the whiteout applied');
      assert.ok(existsSync(join(resolved.rootfs, 'etc/passwd')));
    });
  }

  it('imports the OCI layout directory itself', async () => {
    const store = openImageStore(join(scratch, 'data-layout'));
    const image = await store.importArchive(layout, { name: 'layout:dir' });
    assert.equal(image.id, configDigest);
  });
});
