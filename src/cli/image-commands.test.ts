import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runBerth } from '../testing/berth-cli.js';
import { makeBusyboxRootfs } from '../testing/busybox-rootfs.js';
import { dockerArchiveBytes, tarBytes } from '../testing/oci-fixture-builder.js';

describe('berth image (CLI, real processes)', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-image-cli-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));
  const dir = join(scratch, 'data');
  const rootfs = makeBusyboxRootfs(join(scratch, 'rootfs'));
  let id = '';

  it('import-rootfs prints the image id alone', async () => {
    const r = await runBerth(['image', 'import-rootfs', rootfs, '--name', 'busybox:test', '--dir', dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^sha256:[a-f0-9]{64}\n$/);
    id = r.stdout.trim();
  });

  it('list as table, without legend, and as JSON; BERTH_DIR works like --dir', async () => {
    const table = await runBerth(['image', 'list', '--dir', dir]);
    assert.equal(table.code, 0, table.stderr);
    const [header, row] = table.stdout.trimEnd().split('\n');
    assert.match(header ?? '', /^REPOSITORY\s+TAG\s+IMAGE ID\s+CREATED\s+SIZE$/);
    assert.match(row ?? '', new RegExp(`^busybox\\s+test\\s+${id.slice(7, 19)}\\s`));
    const bare = await runBerth(['image', 'list', '--no-legend'], { BERTH_DIR: dir });
    assert.equal(bare.stdout.trimEnd().split('\n').length, 1);
    const json = await runBerth(['image', 'list', '--format', 'json', '--dir', dir]);
    const images = JSON.parse(json.stdout) as { id: string; names: string[]; manifestDigest: string }[];
    assert.equal(images.length, 1);
    assert.equal(images[0]?.id, id);
    assert.deepEqual(images[0]?.names, ['busybox:test']);
  });

  it('import of a docker-archive prints its id; --name names it', async () => {
    const { bytes, configDigest } = await dockerArchiveBytes({
      layers: [await tarBytes([{ name: 'hello', body: 'world' }])],
      repoTags: ['hello:1'],
    });
    const file = join(scratch, 'hello.tar');
    writeFileSync(file, bytes);
    const r = await runBerth(['image', 'import', file, '--name', 'renamed:2', '--dir', dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${configDigest}\n`);
    const json = JSON.parse((await runBerth(['image', 'list', '--format=json', '--dir', dir])).stdout) as {
      names: string[];
    }[];
    assert.deepEqual(json.flatMap((i) => i.names).sort(), ['busybox:test', 'renamed:2']);
  });

  it('rm by name untags and deletes the last name', async () => {
    const r = await runBerth(['image', 'rm', 'busybox:test', '--dir', dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `Untagged: busybox:test\nDeleted: ${id}\n`);
  });

  const failures: ReadonlyArray<[string, string[], number, RegExp]> = [
    ['an unknown image', ['image', 'rm', 'nope:1'], 3, /Cannot find image "nope:1"/],
    ['an unknown flag', ['image', 'list', '--bogus'], 2, /bogus/],
    ['a bad --format', ['image', 'list', '--format', 'yaml'], 2, /Invalid --format "yaml"/],
    ['import-rootfs without --name', ['image', 'import-rootfs', '/tmp'], 2, /needs --name/],
    ['import without a file', ['image', 'import'], 2, /expects FILE\|DIR/],
    [
      'import of a missing file',
      ['image', 'import', '/nonexistent/x.tar'],
      3,
      /Cannot find file or directory/,
    ],
    [
      'an invalid --name',
      ['image', 'import-rootfs', '/tmp', '--name', 'UPPER:x'],
      2,
      /Invalid --name "UPPER:x"/,
    ],
    ['an unknown subcommand', ['image', 'frob'], 2, /unknown command "image frob"/],
  ];
  for (const [label, args, code, message] of failures) {
    it(`${label}: exit ${code} with a message`, async () => {
      const r = await runBerth([...args, '--dir', dir]);
      assert.equal(r.code, code, r.stderr);
      assert.match(r.stderr, message);
    });
  }

  it('a file that is not an archive: exit 2 naming it', async () => {
    const file = join(scratch, 'junk.bin');
    writeFileSync(file, 'definitely not a tar file\n'.repeat(50));
    const r = await runBerth(['image', 'import', file, '--dir', dir]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, new RegExp(`Cannot import "${file}": it is not a tar archive`));
  });

  it('a layer entry climbing out: exit 2 naming the entry', async () => {
    const { bytes } = await dockerArchiveBytes({
      layers: [await tarBytes([{ name: '../../escape', body: 'x' }])],
    });
    const file = join(scratch, 'evil.tar');
    writeFileSync(file, bytes);
    const r = await runBerth(['image', 'import', file, '--dir', dir]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /entry "\.\.\/\.\.\/escape" climbs out of the image root/);
  });
});
