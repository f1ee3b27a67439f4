import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { InvalidArgumentError } from '../../core/index.js';

export type Compression = 'none' | 'gzip';

/** Magic numbers of the formats a layer may come in; only gzip and plain tar are supported. */
const unsupported: readonly { name: string; magic: readonly number[] }[] = [
  { name: 'zstd', magic: [0x28, 0xb5, 0x2f, 0xfd] },
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
  for (const { name, magic } of unsupported) {
    if (magic.every((byte, i) => head[i] === byte)) {
      throw new InvalidArgumentError(
        `Cannot read ${what}: it is ${name}-compressed, which berth does not support (use gzip or no compression)`,
        { compression: name },
      );
    }
  }
  return 'none';
}

/** The uncompressed bytes of a file: plain or gzip, refusing zstd, xz and bzip2 clearly. */
export async function openUncompressed(path: string, what: string): Promise<Readable> {
  const compression = await sniffCompression(path, what);
  // Large pieces: each is a trip to the thread pool (read, inflate), and layers are big.
  const raw = createReadStream(path, { highWaterMark: 1024 * 1024 });
  if (compression === 'none') return raw;
  const gunzip = createGunzip({ chunkSize: 1024 * 1024 });
  raw.on('error', (err) => gunzip.destroy(err));
  gunzip.on('close', () => raw.destroy());
  return raw.pipe(gunzip);
}
