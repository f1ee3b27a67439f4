import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { PassThrough, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { InvalidArgumentError } from '../../core/index.js';

export type Compression = 'none' | 'gzip' | 'zstd';

const zstdMagic = [0x28, 0xb5, 0x2f, 0xfd] as const;

/** Magic numbers of the formats a layer may come in that berth does not read (gzip and zstd it does). */
const unsupported: readonly { name: string; magic: readonly number[] }[] = [
  { name: 'xz', magic: [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00] },
  { name: 'bzip2', magic: [0x42, 0x5a, 0x68] },
];

/**
 * Sniffs a file's compression from its first bytes, as containers/image does: media types
 * describe intent, the bytes are the truth (docker-archive layers carry no media type at all).
 */
export async function sniffCompression(path: string, what: string): Promise<Compression> {
  const handle = await open(path, 'r');
  const head = Buffer.alloc(6);
  try {
    await handle.read(head, 0, head.length, 0);
  } finally {
    await handle.close();
  }
  if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (zstdMagic.every((byte, i) => head[i] === byte)) return 'zstd';
  for (const { name, magic } of unsupported) {
    if (magic.every((byte, i) => head[i] === byte)) {
      throw new InvalidArgumentError(
        `Cannot read ${what}: it is ${name}-compressed, which berth does not support (use gzip, zstd or no compression)`,
        { compression: name },
      );
    }
  }
  return 'none';
}

/** The uncompressed bytes of a file: plain, gzip or zstd, refusing xz and bzip2 clearly. */
export async function openUncompressed(path: string, what: string): Promise<Readable> {
  const compression = await sniffCompression(path, what);
  if (compression === 'zstd') return unzstd(path, what);
  // Large pieces: each is a trip to the thread pool (read, inflate), and layers are big.
  const raw = createReadStream(path, { highWaterMark: 1024 * 1024 });
  if (compression === 'none') return raw;
  const gunzip = createGunzip({ chunkSize: 1024 * 1024 });
  raw.on('error', (err) => gunzip.destroy(err));
  gunzip.on('close', () => raw.destroy());
  return raw.pipe(gunzip);
}

/**
 * zstd through Debian's `zstd` command (Node 20's zlib has no zstd, and no zstd package is in
 * node_modules): its stdout is the stream; a failure is an error naming the layer and what zstd
 * said, and a missing command says which package to install.
 */
function unzstd(path: string, what: string): Readable {
  const child = spawn('zstd', ['-d', '-c', '-q', '--', path], { stdio: ['ignore', 'pipe', 'pipe'] });
  const out = child.stdout;
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.length < 4096) stderr += chunk.toString('utf8');
  });
  child.on('error', (err: NodeJS.ErrnoException) => {
    out.destroy(
      err.code === 'ENOENT'
        ? new InvalidArgumentError(
            `Cannot read ${what}: it is zstd-compressed and the zstd command is not installed (apt-get install zstd)`,
            { compression: 'zstd' },
          )
        : err,
    );
  });
  // stdout may end before the exit status is known: hold its end until zstd has said how it went.
  const checked = new PassThrough();
  out.on('error', (err) => checked.destroy(err));
  out.pipe(checked, { end: false });
  const ended = new Promise<void>((resolve) => out.once('end', resolve));
  child.on('close', async (code) => {
    await ended;
    if (code === 0) checked.end();
    else {
      checked.destroy(
        new InvalidArgumentError(
          `${what} is not a valid zstd stream (zstd: ${stderr.trim().split('\n').pop() ?? `exit ${code}`})`,
          { compression: 'zstd' },
        ),
      );
    }
  });
  checked.on('close', () => {
    if (child.exitCode === null) child.kill();
  });
  return checked;
}
