import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { extractOutputs, UnsafeArchiveError } from './task-output-extract.js';

const base = mkdtempSync(join(tmpdir(), 'berth-extract-'));
after(() => rmSync(base, { recursive: true, force: true }));
let count = 0;
const freshDir = () => join(base, String(count++));

type Entry = Partial<tar.Header> & { name: string; content?: string };

/** A tar+gzip archive of `entries`, built as a hostile server or cell could build it. */
async function archive(entries: readonly Entry[]): Promise<Readable> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => chunks.push(c as Buffer));
  const ended = new Promise<void>((resolve) => pack.on('end', () => resolve()));
  for (const { content, ...header } of entries) {
    await new Promise<void>((resolve, reject) =>
      pack.entry(header, content ?? '', (err) => (err ? reject(err) : resolve())),
    );
  }
  pack.finalize();
  await ended;
  return Readable.from([gzipSync(Buffer.concat(chunks))]);
}

async function refused(entries: readonly Entry[], dest: string): Promise<Error> {
  try {
    await extractOutputs(await archive(entries), dest);
  } catch (err) {
    assert.ok(err instanceof Error);
    return err;
  }
  assert.fail('extraction succeeded');
}

describe('extractOutputs', () => {
  it('unpacks files and directories with their permission bits', async () => {
    const dest = freshDir();
    const got = await extractOutputs(
      await archive([
        { name: 'result', content: '42\n', mode: 0o640 },
        { name: 'logs/', type: 'directory', mode: 0o755 },
        { name: 'logs/a/b.txt', content: 'deep\n' },
      ]),
      dest,
    );
    assert.deepEqual(got, { files: ['result', 'logs/a/b.txt'], directories: ['logs'], bytes: 8 });
    assert.equal(readFileSync(join(dest, 'result'), 'utf8'), '42\n');
    assert.equal(statSync(join(dest, 'result')).mode & 0o777, 0o640);
    assert.equal(readFileSync(join(dest, 'logs/a/b.txt'), 'utf8'), 'deep\n');
  });

  it('refuses entries that climb out (../, absolute, through ..) and writes nothing outside', async () => {
    const root = freshDir();
    const dest = join(root, 'dest');
    for (const name of ['../escaped', 'ok/../../escaped', '/tmp/escaped-abs', '..']) {
      const err = await refused([{ name, content: 'x' }], dest);
      assert.ok(err instanceof UnsafeArchiveError, `${name}: ${String(err)}`);
      assert.match(err.message, /would land outside the output directory/);
    }
    assert.equal(existsSync(join(root, 'escaped')), false);
    assert.equal(existsSync('/tmp/escaped-abs'), false);
  });

  it('refuses symlinks, hardlinks and devices in the archive', async () => {
    for (const entry of [
      { name: 'link', type: 'symlink', linkname: '/etc/shadow' },
      { name: 'hard', type: 'link', linkname: 'result' },
      { name: 'dev', type: 'character-device', devmajor: 1, devminor: 3 },
    ] as const) {
      const dest = freshDir();
      const err = await refused([entry], dest);
      assert.match(err.message, new RegExp(`Refusing "${entry.name}" in the archive: a ${entry.type} entry`));
      assert.equal(existsSync(join(dest, entry.name)), false);
    }
  });

  it('never follows a symlink already in the destination, nor overwrites a file there', async () => {
    const root = freshDir();
    const dest = join(root, 'dest');
    const elsewhere = join(root, 'elsewhere');
    mkdirSync(dest, { recursive: true });
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(dest, 'logs'));
    symlinkSync(join(elsewhere, 'target'), join(dest, 'result'));
    const viaDir = await refused([{ name: 'logs/a', content: 'x' }], dest);
    assert.match(viaDir.message, /it exists and is not a directory/);
    const viaFile = await refused([{ name: 'result', content: 'x' }], dest);
    assert.match(viaFile.message, /exists already/);
    assert.equal(existsSync(join(elsewhere, 'a')), false);
    assert.equal(existsSync(join(elsewhere, 'target')), false);
    writeFileSync(join(dest, 'kept'), 'mine\n');
    await refused([{ name: 'kept', content: 'theirs' }], dest);
    assert.equal(readFileSync(join(dest, 'kept'), 'utf8'), 'mine\n');
    // A refused entry with more content than the streams buffer: refused the same way.
    const big = await refused([{ name: 'kept', content: 'y'.repeat(1024 * 1024) }, { name: 'next' }], dest);
    assert.match(big.message, /exists already/);
    assert.equal(existsSync(join(dest, 'next')), false);
  });

  it('stops at the byte and entry limits (a gzip bomb ends there)', async () => {
    const big = await archive([{ name: 'big', content: 'x'.repeat(5000) }]);
    await assert.rejects(
      extractOutputs(big, freshDir(), { maxBytes: 1000, maxEntries: 10 }),
      /more than 1000 bytes/,
    );
    const many = await archive([1, 2, 3].map((i) => ({ name: `f${i}`, content: '' })));
    await assert.rejects(
      extractOutputs(many, freshDir(), { maxBytes: 1000, maxEntries: 2 }),
      /more than 2 entries/,
    );
  });
});
