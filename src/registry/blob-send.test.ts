import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type SendFileRangeOptions, sendFileRange } from './blob-send.js';

const scratch = mkdtempSync(join(tmpdir(), 'berth-blob-send-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

// Five pieces and a bit: the reading path's buffers are reused twice, the last piece is short.
const blob = randomBytes(5 * 1024 * 1024 + 12_345);
const path = join(scratch, 'blob');
writeFileSync(path, blob);
// Far more than the socket buffers on both sides hold: the sender waits for room (EAGAIN).
const bigBytes = 120 * 1024 * 1024 + 7;
const bigPath = join(scratch, 'big');
const bigDigest = (() => {
  const hash = createHash('sha256');
  const piece = randomBytes(1024 * 1024);
  const all = Buffer.alloc(bigBytes);
  for (let at = 0; at < bigBytes; at += piece.length) {
    piece[0] = at & 0xff; // no two MiB alike, so a piece sent twice or skipped shows
    piece.copy(all, at, 0, Math.min(piece.length, bigBytes - at));
  }
  writeFileSync(bigPath, all);
  return hash.update(all).digest('hex');
})();

const openFds = () => readdirSync('/proc/self/fd').length;

/** How one request's sendFileRange ended, and what node itself wrote on the socket meanwhile. */
interface Outcome {
  readonly result: string;
  readonly nodeBytes: number;
}

/**
 * A server whose every GET is sendFileRange of a file: `/big` or the small blob, `?a-b` a range of
 * it. `/destroy-after-ms` has the server close the response itself after that long.
 */
function blobHandler(options: SendFileRangeOptions, outcomes: Promise<Outcome>[]) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const file = url.pathname === '/big' ? bigPath : path;
    const size = file === bigPath ? bigBytes : blob.length;
    const range = url.searchParams.get('range');
    const [start = 0, end = size - 1] = range === null ? [] : range.split('-').map(Number);
    const destroyAfter = Number(url.searchParams.get('destroy') ?? Number.NaN);
    // Bytes the handler writes with node before sendFileRange sends the rest: node still holds
    // most of them queued when the send starts.
    const prefix = Number(url.searchParams.get('prefix') ?? 0);
    outcomes.push(
      (async () => {
        const handle = await open(file, 'r');
        const socket = res.socket;
        const before = socket?.bytesWritten ?? 0;
        try {
          res.setHeader('content-length', String(end - start + 1));
          if (destroyAfter >= 0) setTimeout(() => res.destroy(), destroyAfter);
          if (prefix > 0) {
            const { buffer } = await handle.read(Buffer.alloc(prefix), 0, prefix, start);
            res.write(buffer);
          }
          await sendFileRange(res, handle, start + prefix, end, options);
          return { result: 'done', nodeBytes: (socket?.bytesWritten ?? 0) - before };
        } catch (err) {
          res.destroy();
          return { result: err instanceof Error ? err.message : String(err), nodeBytes: 0 };
        } finally {
          await handle.close();
        }
      })(),
    );
  };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** GETs `url` on a connection of its own (closed after it): the body, or the error that cut it short. */
function get(url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    httpRequest(url, { agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks)));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

/** The fds this process has open, once closes under way have had time to happen. */
async function settledFds(): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 100));
  return openFds();
}

/** GETs `url` and hashes the body, pausing `pauseMs` after every `pauseEvery` bytes (a slow reader). */
function slowGet(
  url: string,
  pauseEvery: number,
  pauseMs: number,
): Promise<{ bytes: number; digest: string }> {
  return new Promise((resolve, reject) => {
    httpRequest(url, { agent: false }, (res) => {
      const hash = createHash('sha256');
      let bytes = 0;
      let nextPause = pauseEvery;
      res.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        bytes += chunk.length;
        if (bytes >= nextPause) {
          nextPause += pauseEvery;
          res.pause();
          setTimeout(() => res.resume(), pauseMs);
        }
      });
      res.on('end', () => resolve({ bytes, digest: hash.digest('hex') }));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

/** A GET that reads the first bytes of the body and then calls `then` (which may destroy it). */
function firstBytes(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false }, (res) => res.once('data', () => resolve(res)));
    req.on('error', (err) => {
      if (!req.destroyed) reject(err);
    });
    req.end();
  });
}

for (const sendfile of [true, false]) {
  /** sendFileRange over a real socket: what the registry's blob GET writes its bodies with. */
  describe(`sendFileRange, ${sendfile ? 'by sendfile(2)' : 'by reading (sendfile off)'}`, () => {
    let server: Server;
    let url = '';
    const outcomes: Promise<Outcome>[] = [];
    const settled = async () => (await Promise.all(outcomes.splice(0))).map((o) => o.result);

    before(async () => {
      server = createServer(blobHandler({ sendfile }, outcomes));
      url = `http://${await listen(server)}`;
    });
    after(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    it('sends the whole file, and any range, byte for byte', async () => {
      assert.ok((await get(`${url}/`)).equals(blob));
      for (const [start, end] of [
        [0, 0],
        [1024 * 1024 - 1, 1024 * 1024],
        [3, 4 * 1024 * 1024 + 17],
        [blob.length - 10, blob.length - 1],
      ] as const) {
        const part = await get(`${url}/?range=${start}-${end}`);
        assert.ok(part.equals(blob.subarray(start, end + 1)), `${start}-${end}`);
      }
      const done = await Promise.all(outcomes.splice(0));
      assert.deepEqual(
        done.map((o) => o.result),
        ['done', 'done', 'done', 'done', 'done'],
      );
      // What node wrote on the socket itself: only the headers when the kernel sent the body.
      const whole0 = done[0]?.nodeBytes ?? 0;
      if (sendfile) assert.ok(whole0 < 1024, `node wrote ${whole0} bytes: the body went past it`);
      else assert.ok(whole0 > blob.length, `node wrote ${whole0} bytes: the body went through it`);
    });

    it('sends 120 MiB to a slow reader whole, in order', async () => {
      const got = await slowGet(`${url}/big`, 16 * 1024 * 1024, 40);
      assert.equal(got.bytes, bigBytes);
      assert.equal(got.digest, bigDigest);
      assert.deepEqual(await settled(), ['done']);
    });

    it('puts its bytes after those node still has queued for the socket', async () => {
      const got = await slowGet(`${url}/big?prefix=${32 * 1024 * 1024}`, 8 * 1024 * 1024, 20);
      assert.equal(got.bytes, bigBytes);
      assert.equal(got.digest, bigDigest);
      assert.deepEqual(await settled(), ['done']);
    });

    it('answers a second request on the same kept-alive connection', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const get = (range: string) =>
          new Promise<{ body: Buffer; reused: boolean }>((resolve, reject) => {
            const req = httpRequest(`${url}/?range=${range}`, { agent }, (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (c: Buffer) => chunks.push(c));
              res.on('end', () => resolve({ body: Buffer.concat(chunks), reused: req.reusedSocket }));
            });
            req.on('error', reject).end();
          });
        const first = await get(`0-${blob.length - 1}`);
        const second = await get('10-2000000');
        const third = await get('5-5');
        assert.ok(first.body.equals(blob));
        assert.ok(second.body.equals(blob.subarray(10, 2_000_001)));
        assert.ok(third.body.equals(blob.subarray(5, 6)));
        assert.deepEqual([first.reused, second.reused, third.reused], [false, true, true]);
        assert.deepEqual(await settled(), ['done', 'done', 'done']);
      } finally {
        agent.destroy();
      }
    });

    it('ends quietly when the client goes away mid-body, leaving no fd behind', async () => {
      const fds = await settledFds();
      const res = await firstBytes(`${url}/big`);
      res.destroy();
      assert.deepEqual(await settled(), ['done']);
      // The server goes on answering.
      assert.ok((await get(`${url}/?range=0-99`)).equals(blob.subarray(0, 100)));
      assert.deepEqual(await settled(), ['done']);
      assert.equal(await settledFds(), fds, 'the fds open before the requests, and no more');
    });

    it('ends when the server closes the response under a client that stopped reading', async () => {
      const fds = await settledFds();
      const res = await firstBytes(`${url}/big?destroy=300`);
      res.pause();
      const started = Date.now();
      assert.deepEqual(await settled(), ['done']);
      assert.ok(Date.now() - started < 10_000, 'not held until the idle timeout (5 min)');
      res.destroy();
      assert.equal(await settledFds(), fds);
    });

    it('rejects when the file ends before the range does; the client sees a truncated body', async () => {
      const body = await get(`${url}/?range=0-${blob.length + 1024 * 1024}`).catch((err: unknown) => err);
      assert.ok(body instanceof Error, 'the answer is cut short, never complete');
      assert.deepEqual(await settled(), [
        `the blob file ended at byte ${blob.length}, before byte ${blob.length + 1024 * 1024}`,
      ]);
    });
  });
}

describe('sendFileRange by sendfile(2), a client that takes nothing', () => {
  it('gives up after the idle timeout and closes the connection', async () => {
    const outcomes: Promise<Outcome>[] = [];
    const server = createServer(blobHandler({ idleTimeoutMs: 300 }, outcomes));
    const host = await listen(server);
    try {
      const fds = await settledFds();
      const res = await firstBytes(`http://${host}/big`);
      res.pause();
      const started = Date.now();
      assert.deepEqual(
        (await Promise.all(outcomes.splice(0))).map((o) => o.result),
        ['done'],
      );
      assert.ok(Date.now() - started < 10_000);
      // The client, reading again, finds the connection closed after what was on its way.
      const closed = new Promise((resolve) => res.once('close', resolve));
      res.resume();
      await closed;
      assert.equal(res.complete, false, 'the body is cut short');
      assert.equal(await settledFds(), fds);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('sendFileRange over TLS', () => {
  const key = join(scratch, 'key.pem');
  const cert = join(scratch, 'cert.pem');
  const made = spawnSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    key,
    '-out',
    cert,
    '-subj',
    '/CN=127.0.0.1',
    '-days',
    '1',
  ]);
  it('reads and writes the body itself (sendfile would bypass the encryption)', {
    skip: made.status !== 0 && 'no openssl to make a certificate',
  }, async () => {
    const outcomes: Promise<Outcome>[] = [];
    const server = createHttpsServer(
      { key: readFileSync(key), cert: readFileSync(cert) },
      blobHandler({}, outcomes),
    );
    const host = await listen(server);
    try {
      const body = await new Promise<Buffer>((resolve, reject) => {
        httpsRequest(`https://${host}/`, { rejectUnauthorized: false }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks)));
        })
          .on('error', reject)
          .end();
      });
      assert.ok(body.equals(blob));
      const [outcome] = await Promise.all(outcomes.splice(0));
      assert.equal(outcome?.result, 'done');
      assert.ok((outcome?.nodeBytes ?? 0) > blob.length, 'the body went through node');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
