import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SseParser } from './sse-parser.js';

describe('SseParser', () => {
  it('parses id, event and multi-line data, skipping comments', () => {
    const parser = new SseParser();
    const out = parser.feed(': hello\n\nid: 1-2\nevent: task_created\ndata: {"a":\ndata: 1}\n\n');
    assert.deepEqual(out, [{ id: '1-2', event: 'task_created', data: '{"a":\n1}' }]);
  });

  it('keeps state across chunks split anywhere, CRLF included, and remembers the last id', () => {
    const parser = new SseParser();
    const text = 'id: 7\r\nevent: x\r\ndata: one\r\n\r\ndata: two\r\n\r\n';
    const out = [];
    for (const ch of text) out.push(...parser.feed(ch));
    assert.deepEqual(out, [
      { id: '7', event: 'x', data: 'one' },
      { id: '7', event: 'message', data: 'two' },
    ]);
  });

  it('a blank line without fields dispatches nothing; unknown fields are ignored', () => {
    const parser = new SseParser();
    assert.deepEqual(parser.feed('\n\nretry: 5\nfoo: bar\n\n'), []);
  });
});
