import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { UncompressedDigester } from './uncompressed-digest.js';

function sha256(data: Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** Feeds `data` as an upload arrives: pieces of uneven sizes, one larger than a batch. */
async function feed(digester: UncompressedDigester, data: Buffer): Promise<void> {
  const sizes = [65_536, 3 * 1024 * 1024 + 5, 100_003, 1];
  for (let offset = 0, i = 0; offset < data.length; i++) {
    const size = sizes[i % sizes.length] ?? 65_536;
    await digester.write(data.subarray(offset, offset + size));
    offset += size;
  }
}

describe('UncompressedDigester', () => {
  // Random bytes do not compress: several batches of input, so both buffers are reused.
  const raw = randomBytes(6 * 1024 * 1024 + 777);
  const gzip = gzipSync(raw, { level: 1 });

  it('digests the uncompressed bytes of a gzip stream fed in any pieces', async () => {
    const digester = UncompressedDigester.forHead(gzip);
    assert.ok(digester);
    await feed(digester, gzip);
    assert.equal(await digester.digest(), sha256(raw));
  });

  it('is only made for a gzip head', () => {
    assert.equal(UncompressedDigester.forHead(Buffer.from('plain tar')), undefined);
  });

  it('gives no digest (and does not hang) for a truncated or corrupt stream', async () => {
    const truncated = UncompressedDigester.forHead(gzip);
    assert.ok(truncated);
    await feed(truncated, gzip.subarray(0, gzip.length - 1000));
    assert.equal(await truncated.digest(), undefined);

    const corrupt = Buffer.from(gzip);
    corrupt.fill(0xff, 10, 2 * 1024 * 1024);
    const digester = UncompressedDigester.forHead(corrupt);
    assert.ok(digester);
    await feed(digester, corrupt);
    assert.equal(await digester.digest(), undefined);
  });

  it('gives no digest once abandoned', async () => {
    const digester = UncompressedDigester.forHead(gzip);
    assert.ok(digester);
    await digester.write(gzip.subarray(0, 3 * 1024 * 1024));
    digester.abandon();
    await digester.write(gzip.subarray(3 * 1024 * 1024));
    assert.equal(await digester.digest(), undefined);
  });
});
