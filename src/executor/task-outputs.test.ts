import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { after, describe, it } from 'node:test';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { collectTaskOutputs, OutputCollectionError } from './task-outputs.js';

/**
 * Output collection on real directories laid out as a pod's root is (the pod's overlay upper dir
 * over the image's rootfs; whiteouts are real 0/0 character devices: the tests run as root, as
 * berth does). Beside the layers sits a "host" directory with a secret that must never be read.
 */
const base = mkdtempSync(join(tmpdir(), 'berth-outputs-'));
after(() => rmSync(base, { recursive: true, force: true }));

let count = 0;
function layout() {
  const dir = join(base, String(count++));
  const upper = join(dir, 'upper');
  const lower = join(dir, 'lower');
  const host = join(dir, 'host');
  for (const d of [upper, lower, host]) mkdirSync(d, { recursive: true });
  writeFileSync(join(host, 'secret'), 'host secret\n');
  return { upper, lower, host, layers: [upper, lower], archive: join(dir, 'out.tar.gz') };
}

const limits = { maxBytes: 1024 * 1024, maxEntries: 100 };

/** The archive's entries: name → content (files) or 'dir'. */
async function entries(archive: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => chunks.push(c as Buffer));
    stream.on('end', () => {
      found.set(header.name, header.type === 'directory' ? 'dir' : Buffer.concat(chunks).toString());
      next();
    });
  });
  await pipeline(createReadStream(archive), createGunzip(), extract);
  return found;
}

async function refusal(promise: Promise<unknown>): Promise<OutputCollectionError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof OutputCollectionError, `expected OutputCollectionError, got ${String(err)}`);
    return err;
  }
  assert.fail('collection succeeded');
}

describe('collectTaskOutputs', () => {
  it('archives a file and a directory tree under their names, the container writes over the image', async () => {
    const l = layout();
    mkdirSync(join(l.lower, 'out/sub'), { recursive: true });
    writeFileSync(join(l.lower, 'out/image.txt'), 'from the image\n');
    writeFileSync(join(l.lower, 'out/sub/old'), 'old\n');
    mkdirSync(join(l.upper, 'out/sub'), { recursive: true });
    writeFileSync(join(l.upper, 'out/sub/old'), 'new\n');
    writeFileSync(join(l.upper, 'out/sub/deep'), 'deep\n');
    mkdirSync(join(l.upper, 'data'));
    writeFileSync(join(l.upper, 'data/result.json'), '{"ok":true}\n');
    const got = await collectTaskOutputs(
      l.layers,
      [
        { name: 'result', path: '/data/result.json' },
        { name: 'tree', path: '/out' },
      ],
      limits,
      l.archive,
    );
    assert.equal(got.entries, 6);
    assert.equal(got.contentBytes, 12 + 15 + 4 + 5);
    assert.match(got.sha256, /^[0-9a-f]{64}$/);
    assert.deepEqual(
      [...(await entries(l.archive))],
      [
        ['result', '{"ok":true}\n'],
        ['tree/', 'dir'],
        ['tree/image.txt', 'from the image\n'],
        ['tree/sub/', 'dir'],
        ['tree/sub/deep', 'deep\n'],
        ['tree/sub/old', 'new\n'],
      ],
    );
  });

  it('leaves out what a whiteout deleted in the container, and reads paths through in-root links', async () => {
    const l = layout();
    mkdirSync(join(l.lower, 'out'));
    writeFileSync(join(l.lower, 'out/kept'), 'kept\n');
    writeFileSync(join(l.lower, 'out/deleted'), 'deleted\n');
    mkdirSync(join(l.upper, 'out'));
    execFileSync('mknod', [join(l.upper, 'out/deleted'), 'c', '0', '0']);
    // A directory on the way that is a link resolves as the container resolved it: in its root.
    symlinkSync('/out', join(l.upper, 'results'));
    await collectTaskOutputs(l.layers, [{ name: 'o', path: '/results/' }], limits, l.archive);
    assert.deepEqual([...(await entries(l.archive)).keys()], ['o/', 'o/kept']);
  });

  it('refuses a symlink that is an output (to a host file), naming it, and reads nothing through it', async () => {
    const l = layout();
    mkdirSync(join(l.upper, 'out'));
    symlinkSync('/etc/shadow', join(l.upper, 'out/shadow'));
    symlinkSync(join(l.host, 'secret'), join(l.upper, 'out/secret'));
    const err = await refusal(
      collectTaskOutputs(l.layers, [{ name: 'key', path: '/out/shadow' }], limits, l.archive),
    );
    assert.match(
      err.message,
      /output "key" \(\/out\/shadow\): \/out\/shadow is a symbolic link \(to \/etc\/shadow\); links are refused/,
    );
    assert.equal(existsSync(l.archive), false, 'no archive is left behind');
    const inDir = await refusal(
      collectTaskOutputs(l.layers, [{ name: 'all', path: '/out' }], limits, l.archive),
    );
    assert.match(inDir.message, /output "all" \(\/out\): \/out\/secret is a symbolic link/);
    assert.equal(existsSync(l.archive), false);
  });

  it('a link on the way that points at a host path stays in the container root', async () => {
    const l = layout();
    // In the container, `host` → the host dir's absolute path, which does not exist in its root.
    symlinkSync(l.host, join(l.upper, 'host'));
    const err = await refusal(
      collectTaskOutputs(l.layers, [{ name: 's', path: '/host/secret' }], limits, l.archive),
    );
    assert.match(err.message, /output "s" \(\/host\/secret\): no such file or directory/);
  });

  it('fails on a missing path, a device, too many bytes and too many entries, naming the output', async () => {
    const l = layout();
    mkdirSync(join(l.upper, 'out'));
    writeFileSync(join(l.upper, 'out/big'), Buffer.alloc(2048, 1));
    for (let i = 0; i < 5; i++) writeFileSync(join(l.upper, 'out', `f${i}`), 'x');
    execFileSync('mkfifo', [join(l.upper, 'fifo')]);
    const missing = await refusal(
      collectTaskOutputs(l.layers, [{ name: 'gone', path: '/nope/file' }], limits, l.archive),
    );
    assert.match(
      missing.message,
      /^Cannot collect output "gone" \(\/nope\/file\): no such file or directory$/,
    );
    const fifo = await refusal(
      collectTaskOutputs(l.layers, [{ name: 'p', path: '/fifo' }], limits, l.archive),
    );
    assert.match(fifo.message, /\/fifo is not a regular file or directory/);
    const big = await refusal(
      collectTaskOutputs(
        l.layers,
        [{ name: 'big', path: '/out/big' }],
        { maxBytes: 1000, maxEntries: 10 },
        l.archive,
      ),
    );
    assert.match(
      big.message,
      /output "big" \(\/out\/big\): the task's outputs exceed their limit of 1000 bytes \(2048 bytes so far\)/,
    );
    const many = await refusal(
      collectTaskOutputs(
        l.layers,
        [{ name: 'o', path: '/out' }],
        { maxBytes: 1e6, maxEntries: 4 },
        l.archive,
      ),
    );
    assert.match(many.message, /more than 4 files and directories/);
    assert.equal(existsSync(l.archive), false);
    assert.equal(readFileSync(join(l.host, 'secret'), 'utf8'), 'host secret\n');
  });
});
