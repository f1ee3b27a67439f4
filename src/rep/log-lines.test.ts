import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeLogRecords, type LogStream } from '../runtime/index.js';
import { type LogLine, LogLineWriter, type LogLineWriterOptions } from './log-lines.js';

const at = (ms: number) => new Date(Date.UTC(2026, 10, 27, 15, 0, 0, ms));
const framed = (stream: LogStream, text: string, ms: number) =>
  encodeLogRecords(stream, Buffer.from(text), at(ms));

/** Writes `chunks` through a LogLineWriter and returns the lines it sent, `live` marks included. */
async function lines(
  chunks: readonly Buffer[],
  options: Partial<LogLineWriterOptions> = {},
): Promise<LogLine[]> {
  const sent: LogLine[] = [];
  const writer = new LogLineWriter({
    backlogBytes: 0,
    backlogTime: at(999),
    now: () => at(500),
    emit: (text) => {
      sent.push(JSON.parse(text) as LogLine);
      return true;
    },
    drained: () => Promise.resolve(),
    ...options,
  });
  await writer.begin();
  for (const chunk of chunks) await new Promise<void>((r, j) => writer.write(chunk, (e) => (e ? j(e) : r())));
  await new Promise<void>((r) => writer.end(r));
  return sent;
}

describe('LogLineWriter', () => {
  it("each line with the time it was written and its stream; a line written in pieces is one, at its first piece's time", async () => {
    const sent = await lines([
      framed('stdout', 'one\nhalf', 1),
      framed('stderr', 'oops\n', 2),
      framed('stdout', ' done\n', 3),
    ]);
    assert.deepEqual(sent, [
      { ts: at(500).toISOString(), event: 'live' },
      { ts: at(1).toISOString(), stream: 'stdout', line: 'one' },
      { ts: at(2).toISOString(), stream: 'stderr', line: 'oops' },
      { ts: at(1).toISOString(), stream: 'stdout', line: 'half done' },
    ]);
  });

  it('--tail keeps the last lines of the backlog; --since drops lines written before it', async () => {
    const backlog = Buffer.concat([framed('stdout', 'a\nb\nc\n', 1), framed('stderr', 'd\n', 20)]);
    const live = framed('stdout', 'e\n', 30);
    const tailed = await lines([backlog, live], { backlogBytes: backlog.length, tail: 2 });
    assert.deepEqual(
      tailed.map((l) => l.line ?? l.event),
      ['c', 'd', 'live', 'e'],
    );
    // Not following: what was written after the request came is not sent (nor counted in the tail).
    const snapshot = await lines([backlog, live], { backlogBytes: backlog.length, tail: 2, snapshot: true });
    assert.deepEqual(
      snapshot.map((l) => l.line ?? l.event),
      ['c', 'd', 'live'],
    );
    const since = await lines([backlog, live], { backlogBytes: backlog.length, sinceMs: at(10).getTime() });
    assert.deepEqual(
      since.map((l) => l.line ?? l.event),
      ['d', 'live', 'e'],
    );
  });

  it('a log from an older berth: backlog lines at its last write, live ones when read, no stream', async () => {
    const sent = await lines([Buffer.from('old\n'), Buffer.from('new\n')], { backlogBytes: 4 });
    assert.deepEqual(sent, [
      { ts: at(999).toISOString(), line: 'old' },
      { ts: at(500).toISOString(), event: 'live' },
      { ts: at(500).toISOString(), line: 'new' },
    ]);
  });

  it('cuts a line longer than 16 KiB', async () => {
    const sent = await lines([framed('stdout', `${'x'.repeat(40_000)}\n`, 1)]);
    assert.deepEqual(
      sent.filter((l) => l.line !== undefined).map((l) => l.line?.length),
      [16_384, 16_384, 40_000 - 2 * 16_384],
    );
  });
});
