import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, describe, it } from 'node:test';
import { encodeLogRecords, LogRecordDecoder, type LogStream, recordBytes } from './pod-log-format.js';
import { copyLog, endLog, LogRecordWriter, readLogTail } from './pod-log-reader.js';

const root = mkdtempSync(join(tmpdir(), 'berth-log-format-'));
after(() => rmSync(root, { recursive: true, force: true }));

const at = (ms: number) => new Date(Date.UTC(2026, 10, 27, 15, 0, 0, ms));

function decodeAll(bytes: Buffer | string, pieces = 1) {
  const decoder = new LogRecordDecoder();
  const data = Buffer.from(bytes);
  const step = Math.ceil(data.length / pieces);
  const records = [];
  for (let i = 0; i < data.length; i += step) records.push(...decoder.push(data.subarray(i, i + step)));
  records.push(...decoder.end());
  return {
    framed: decoder.framed,
    records: records.map((r) => ({ ...r, content: r.content.toString() })),
    text: Buffer.concat(records.map(recordBytes)).toString(),
  };
}

function framed(...writes: [LogStream, string, number][]): Buffer {
  return Buffer.concat(
    writes.map(([stream, text, ms]) => encodeLogRecords(stream, Buffer.from(text), at(ms))),
  );
}

describe('the log records (CRI format)', () => {
  it('one record per line, with its time and stream; a line without its newline yet is P', () => {
    const log = framed(['stdout', 'one\ntwo\npart', 1], ['stderr', 'oops\n', 2], ['stdout', 'ial\n', 3]);
    assert.equal(
      log.toString(),
      [
        '2026-11-27T15:00:00.001Z stdout F one',
        '2026-11-27T15:00:00.001Z stdout F two',
        '2026-11-27T15:00:00.001Z stdout P part',
        '2026-11-27T15:00:00.002Z stderr F oops',
        '2026-11-27T15:00:00.003Z stdout F ial',
        '',
      ].join('\n'),
    );
    // Split anywhere, the same records come back, and the app's bytes in order.
    for (const pieces of [1, 3, 17, log.length]) {
      const { framed: isFramed, records, text } = decodeAll(log, pieces);
      assert.equal(isFramed, true);
      assert.deepEqual(
        records.map((r) => [r.time, r.stream, r.partial, r.content]),
        [
          ['2026-11-27T15:00:00.001Z', 'stdout', false, 'one'],
          ['2026-11-27T15:00:00.001Z', 'stdout', false, 'two'],
          ['2026-11-27T15:00:00.001Z', 'stdout', true, 'part'],
          ['2026-11-27T15:00:00.002Z', 'stderr', false, 'oops'],
          ['2026-11-27T15:00:00.003Z', 'stdout', false, 'ial'],
        ],
      );
      assert.equal(text, 'one\ntwo\npartoops\nial\n');
      assert.equal(
        records.reduce((sum, r) => sum + r.bytes, 0),
        log.length,
      );
    }
  });

  it('cuts a line longer than the bound into P records, and keeps empty lines and \\r', () => {
    const bytes = encodeLogRecords('stdout', Buffer.from(`${'x'.repeat(10)}\n\nend\r\n`), at(0), 4);
    const { records, text } = decodeAll(bytes);
    assert.deepEqual(
      records.map((r) => [r.partial, r.content]),
      [
        [true, 'xxxx'],
        [true, 'xxxx'],
        [false, 'xx'],
        [false, ''],
        [false, 'end\r'],
      ],
    );
    assert.equal(text, `${'x'.repeat(10)}\n\nend\r\n`);
    // Every newline ends a record: a writer rotates at any of them.
    assert.equal(bytes.filter((b) => b === 0x0a).length, records.length);
    // A trailing part longer than the bound: P records only.
    const rest = decodeAll(encodeLogRecords('stderr', Buffer.from('a\nbbbbbbbbb'), at(0), 4)).records;
    assert.deepEqual(
      rest.map((r) => [r.stream, r.partial, r.content]),
      [
        ['stderr', false, 'a'],
        ['stderr', true, 'bbbb'],
        ['stderr', true, 'bbbb'],
        ['stderr', true, 'b'],
      ],
    );
  });

  it('a log from an older berth is read as it is, without times or streams', () => {
    const old = 'hello\n2026-11-27T15:00:00.001Z stdout F looks like a record\nno newline';
    const { framed: isFramed, records, text } = decodeAll(old, 5);
    assert.equal(isFramed, false);
    assert.equal(text, old);
    assert.ok(records.every((r) => r.time === undefined && r.stream === undefined));
    // A very long old line comes in bounded pieces.
    const long = decodeAll(`${'z'.repeat(40_000)}\n`, 10);
    assert.ok(long.records.every((r) => r.content.length <= 16 * 1024));
    assert.equal(long.text, `${'z'.repeat(40_000)}\n`);
  });

  it("in a framed log, a line that is no record (the holder's last words) is stderr at the last time", () => {
    const log = Buffer.concat([framed(['stdout', 'up\n', 5]), Buffer.from('berth stage-1 holder: boom\n')]);
    const { records } = decodeAll(log);
    assert.deepEqual(records[1], {
      time: '2026-11-27T15:00:00.005Z',
      stream: 'stderr',
      partial: false,
      content: 'berth stage-1 holder: boom',
      bytes: 27,
    });
  });
});

describe('reading framed logs', () => {
  it('readLogTail keeps the content of whole records, and an old log as it was', () => {
    const dir = mkdtempSync(join(root, 'pod-'));
    const first = framed(['stdout', 'first line\n', 0]);
    writeFileSync(join(dir, 'log'), Buffer.concat([first, framed(['stderr', 'second\nthird\n', 1])]));
    const { text, size } = readLogTail(dir);
    assert.equal(text, 'first line\nsecond\nthird\n');
    // Cut inside the first record: the tail starts at the next whole one.
    assert.equal(readLogTail(dir, size - first.length + 10).text, 'second\nthird\n');
    const old = mkdtempSync(join(root, 'pod-'));
    writeFileSync(join(old, 'log'), 'plain\nold log\n');
    assert.equal(readLogTail(old, 10).text, 'n\nold log\n');
  });

  it("readLogTail continues a partial line with its own stream's next record, not another stream's", () => {
    const dir = mkdtempSync(join(root, 'pod-'));
    writeFileSync(
      join(dir, 'log'),
      framed(
        ['stderr', 'sh: ', 0],
        ['stdout', 'out 1\nout', 1],
        ['stderr', "can't create\n", 2],
        ['stdout', ' 2', 3],
      ),
    );
    assert.equal(readLogTail(dir).text, "sh: can't create\nout 1\nout 2");
  });

  it("LogRecordWriter sends stdout's lines to stdout and stderr's to stderr, with times on request", async () => {
    const dir = mkdtempSync(join(root, 'pod-'));
    writeFileSync(
      join(dir, 'log'),
      framed(['stdout', 'a\nb', 0], ['stderr', 'err\n', 1], ['stdout', 'c\n', 2], ['stdout', 'tail', 3]),
    );
    const run = async (timestamps: boolean) => {
      const [stdout, stderr] = [new PassThrough(), new PassThrough()];
      const writer = new LogRecordWriter({ stdout, stderr }, { timestamps });
      await copyLog(dir, writer);
      await endLog(writer);
      return { out: stdout.read()?.toString() ?? '', err: stderr.read()?.toString() ?? '' };
    };
    assert.deepEqual(await run(false), { out: 'a\nbc\ntail', err: 'err\n' });
    assert.deepEqual(await run(true), {
      out: '2026-11-27T15:00:00.000Z a\n2026-11-27T15:00:00.000Z bc\n2026-11-27T15:00:00.003Z tail',
      err: '2026-11-27T15:00:00.001Z err\n',
    });
  });
});
