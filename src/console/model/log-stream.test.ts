import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineSplitter, LogBuffer, logsQuery, parseLogLine } from './log-stream.js';

describe('console log stream', () => {
  it('splits lines fed in arbitrary pieces, keeping an unterminated tail for later', () => {
    const splitter = new LineSplitter();
    assert.deepEqual(splitter.feed('{"a":1}\n{"b"'), ['{"a":1}']);
    assert.deepEqual(splitter.feed(':2}\r\n\n'), ['{"b":2}']);
    assert.deepEqual(splitter.feed('{"c":3}'), []);
    assert.deepEqual(splitter.feed('\n'), ['{"c":3}']);
  });

  it('reads log lines, error lines, the stream when given, and skips markers and garbage', () => {
    assert.deepEqual(parseLogLine('{"ts":"t1","source":"web/0","line":"GET / 200"}', 4), {
      kind: 'line',
      seq: 4,
      ts: 't1',
      source: 'web/0',
      text: 'GET / 200',
      stream: undefined,
    });
    assert.equal(parseLogLine('{"ts":"t","source":"w/1","line":"x","stream":"stderr"}', 0)?.kind, 'line');
    const withStream = parseLogLine('{"ts":"t","source":"w/1","line":"x","stream":"stderr"}', 0);
    assert.equal(withStream?.kind === 'line' ? withStream.stream : '', 'stderr');
    assert.deepEqual(parseLogLine('{"ts":"t2","source":"web/1","error":"Cannot reach c2"}', 1), {
      kind: 'error',
      seq: 1,
      ts: 't2',
      source: 'web/1',
      text: 'Cannot reach c2',
    });
    assert.equal(parseLogLine('{"event":"live"}', 0), undefined);
    assert.equal(parseLogLine('not json', 0), undefined);
    assert.equal(parseLogLine('[1,2]', 0), undefined);
    assert.equal(parseLogLine('null', 0), undefined);
  });

  it('keeps only the newest entries, counting what it let go', () => {
    const buffer = new LogBuffer(3);
    const text = [1, 2, 3, 4, 5].map((n) => JSON.stringify({ ts: `t${n}`, source: 'a/0', line: `l${n}` }));
    assert.equal(buffer.feed(`${text.join('\n')}\n`), true);
    assert.deepEqual(
      buffer.entries.map((e) => e.text),
      ['l3', 'l4', 'l5'],
    );
    assert.equal(buffer.dropped, 2);
    assert.deepEqual(
      buffer.entries.map((e) => e.seq),
      [2, 3, 4],
    );
    assert.equal(buffer.feed('{"event":"live"}\n'), false);
  });

  it('asks for one instance or a whole app, following or not', () => {
    assert.equal(
      logsQuery({ app: 'shop.web.1a2b', index: 2, tail: 200, follow: true }),
      '/v1/logs?app=shop.web.1a2b&tail=200&index=2&follow=true',
    );
    assert.equal(logsQuery({ app: 'a b', tail: 10, follow: false }), '/v1/logs?app=a+b&tail=10');
  });
});
