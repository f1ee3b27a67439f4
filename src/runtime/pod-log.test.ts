import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { logDroppedMarker, parseLogSizeMax, RotatingLogWriter } from './pod-log.js';
import { LogRecordDecoder, recordBytes } from './pod-log-format.js';
import { copyLog, followLog, readLogTail } from './pod-log-reader.js';

const root = mkdtempSync(join(tmpdir(), 'berth-pod-log-'));
after(() => rmSync(root, { recursive: true, force: true }));
const freshDir = () => mkdtempSync(join(root, 'pod-'));

/** Bytes 0..length-1 of a numbered pattern: every position's byte differs from its neighbours'. */
function pattern(length: number, start = 0): Buffer {
  const b = Buffer.alloc(length);
  for (let i = 0; i < length; i++) b[i] = 33 + ((start + i) % 90);
  return b;
}

class Collect extends Writable {
  chunks: Buffer[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.chunks.push(chunk);
    done();
  }
  get bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** The app's bytes in a log's records (every file of a framed log starts with a record). */
function content(framed: Buffer): Buffer {
  const decoder = new LogRecordDecoder();
  const records = [...decoder.push(framed), ...decoder.end()];
  assert.equal(decoder.framed, framed.length > 0 ? true : undefined, 'the log is framed');
  return Buffer.concat(records.map(recordBytes));
}

describe('RotatingLogWriter', () => {
  it('keeps at most twice the cap on disk, whatever is written, and the newest bytes in order', () => {
    const dir = freshDir();
    const cap = 64 * 1024;
    const log = new RotatingLogWriter(dir, cap);
    const all = pattern(1_000_003);
    // Uneven chunks, some bigger than the cap, as a pipe delivers them.
    for (let at = 0, step = 1; at < all.length; at += step, step = 1 + ((step * 7 + 5) % 150_000))
      log.write(at % 2 === 0 ? 'stdout' : 'stderr', all.subarray(at, Math.min(all.length, at + step)));
    log.close();
    const current = readFileSync(join(dir, 'log'));
    const rotated = readFileSync(join(dir, 'log.1'));
    assert.ok(current.length <= cap && current.length > 0, `log is ${current.length} bytes`);
    assert.ok(rotated.length <= cap && rotated.length > cap - 16 * 1024, `log.1 is ${rotated.length} bytes`);
    // Each file starts with a record: rotation falls between them.
    const kept = Buffer.concat([content(rotated), content(current)]);
    assert.deepEqual(kept, all.subarray(all.length - kept.length));
    assert.ok(existsSync(join(dir, logDroppedMarker)), 'output was dropped, and that is recorded');
  });

  it('appends to a log that is there, and marks nothing dropped after a single rotation', () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'log'), 'before\n');
    const log = new RotatingLogWriter(dir, 8 * 1024);
    log.write('stdout', pattern(10 * 1024));
    log.close();
    assert.ok(statSync(join(dir, 'log.1')).size <= 8 * 1024);
    assert.equal(readFileSync(join(dir, 'log.1')).subarray(0, 7).toString(), 'before\n');
    assert.equal(existsSync(join(dir, logDroppedMarker)), false);
  });
});

describe('parseLogSizeMax', () => {
  it('takes b/k/m/g sizes within 8k..16g and names the flag otherwise', () => {
    assert.equal(parseLogSizeMax('1m'), 1024 * 1024);
    assert.equal(parseLogSizeMax('8k'), 8192);
    assert.equal(parseLogSizeMax('16G'), 16 * 1024 ** 3);
    for (const bad of ['', 'lots', '-1m', '1k', '17g', '99999999999999999999g'])
      assert.throws(() => parseLogSizeMax(bad), /--log-size-max/, bad);
  });
});

describe('readLogTail', () => {
  it('reads only the last bytes across log.1 and log, with the size on disk', () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'log.1'), 'a'.repeat(5000));
    writeFileSync(join(dir, 'log'), 'b'.repeat(3000));
    const tail = readLogTail(dir, 4000);
    assert.equal(tail.text, 'a'.repeat(1000) + 'b'.repeat(3000));
    assert.equal(tail.size, 8000);
    assert.equal(tail.truncated, true);
    const whole = readLogTail(dir, 10_000);
    assert.equal(whole.text.length, 8000);
    assert.equal(whole.truncated, false, 'one rotation dropped nothing');
    writeFileSync(join(dir, logDroppedMarker), '');
    assert.equal(readLogTail(dir, 10_000).truncated, true, 'a rotation dropped older output');
  });

  it('a log far bigger than the tail costs only the tail, cut on a character boundary', () => {
    const dir = freshDir();
    // 40 MiB of three-byte characters: the tail starts inside one.
    writeFileSync(join(dir, 'log'), '€'.repeat((40 * 1024 * 1024) / 3));
    const before = process.memoryUsage().arrayBuffers;
    const tail = readLogTail(dir, 1000);
    assert.ok(process.memoryUsage().arrayBuffers - before < 1024 * 1024);
    assert.equal(tail.text, '€'.repeat(333));
    assert.equal(tail.truncated, true);
  });

  it('a pod with no log yet has an empty one', () => {
    assert.deepEqual(readLogTail(freshDir()), { text: '', size: 0, truncated: false });
  });
});

describe('copyLog and followLog', () => {
  it('copyLog writes log.1 then log', async () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'log.1'), 'old\n');
    writeFileSync(join(dir, 'log'), 'new\n');
    const out = new Collect();
    await copyLog(dir, out);
    assert.equal(out.bytes.toString(), 'old\nnew\n');
  });

  it('followLog reads every byte once, in order, across rotations, until the pod ends', {
    timeout: 60_000,
  }, async () => {
    const dir = freshDir();
    const log = new RotatingLogWriter(dir, 8 * 1024);
    log.write('stdout', pattern(20 * 1024)); // rotated several times before the follower starts
    const kept = content(Buffer.concat([readFileSync(join(dir, 'log.1')), readFileSync(join(dir, 'log'))]));
    const out = new Collect();
    let end = () => {};
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    const following = followLog(dir, out, ended);
    let written = 20 * 1024;
    const expected = [kept]; // log.1 and log when it started
    // The follower copies records; a record is complete once its newline is in.
    const wait = async (bytes: number) => {
      while (out.bytes.at(-1) !== 0x0a || content(out.bytes).length < bytes) await sleep(5);
    };
    await wait(kept.length);
    // Each write waits for the follower to catch up, so no rotation outruns it: then nothing may
    // be lost or repeated, and several writes cross a rotation.
    for (let i = 0; i < 12; i++) {
      const chunk = pattern(3000, written);
      log.write('stdout', chunk);
      expected.push(chunk);
      written += chunk.length;
      await wait(Buffer.concat(expected).length);
    }
    log.write('stdout', Buffer.from('the end\n'));
    expected.push(Buffer.from('the end\n'));
    log.close();
    end();
    await following;
    assert.deepEqual(content(out.bytes), Buffer.concat(expected));
  });
});
