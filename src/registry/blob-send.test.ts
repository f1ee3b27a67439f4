import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sendFileRange } from './blob-send.js';

/** sendFileRange over a real socket: what the registry's blob GET writes its bodies with. */
describe('sendFileRange', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-blob-send-'));
  const path = join(scratch, 'blob');
  // Five pieces and a bit: both buffers are reused twice, the last piece is short.
  const blob = randomBytes(5 * 1024 * 1024 + 12_345);
  let server: Server;
  let url = '';
  /** How each request's sendFileRange ended: 'done', or the message it rejected with. */
  const outcomes: Promise<string>[] = [];

  before(async () => {
    writeFileSync(path, blob);
    server = createServer((req, res) => {
      const [start = 0, end = blob.length - 1] = (req.url ?? '').slice(1).split('-').map(Number);
      outcomes.push(
        (async () => {
          const file = await open(path, 'r');
          try {
            res.setHeader('content-length', String(end - start + 1));
            await sendFileRange(res, file, start, end);
            return 'done';
          } catch (err) {
            res.destroy();
            return err instanceof Error ? err.message : String(err);
          } finally {
            await file.close();
          }
        })(),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(scratch, { recursive: true, force: true });
  });

  it('sends the whole file, and any range, byte for byte', async () => {
    const whole = await fetch(`${url}/`);
    assert.ok(Buffer.from(await whole.arrayBuffer()).equals(blob));
    for (const [start, end] of [
      [0, 0],
      [1024 * 1024 - 1, 1024 * 1024],
      [3, 4 * 1024 * 1024 + 17],
      [blob.length - 10, blob.length - 1],
    ] as const) {
      const part = await fetch(`${url}/${start}-${end}`);
      assert.ok(
        Buffer.from(await part.arrayBuffer()).equals(blob.subarray(start, end + 1)),
        `${start}-${end}`,
      );
    }
    assert.deepEqual(await Promise.all(outcomes.splice(0)), ['done', 'done', 'done', 'done', 'done']);
  });

  it('ends quietly when the client goes away mid-body', async () => {
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${url}/`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', (err) => {
        if (!req.destroyed) reject(err);
      });
      req.end();
    });
    assert.deepEqual(await Promise.all(outcomes.splice(0)), ['done']);
  });

  it('rejects when the file ends before the range does; the client sees a truncated body', async () => {
    const body = await fetch(`${url}/0-${blob.length + 1024 * 1024}`)
      .then((r) => r.arrayBuffer())
      .catch((err: unknown) => err);
    assert.ok(body instanceof Error, 'the answer is cut short, never complete');
    assert.deepEqual(await Promise.all(outcomes.splice(0)), [
      `the blob file ended at byte ${blob.length}, before byte ${blob.length + 1024 * 1024}`,
    ]);
  });
});
