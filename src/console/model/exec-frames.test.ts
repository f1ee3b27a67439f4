import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execChannel, execFrame, parseExecFrame } from '../../core/exec-channels.js';
import { decodeExecFrame, encodeExecFrame, execChannels, execSocketUrl, resizeFrame } from './exec-frames.js';

describe('console exec frames', () => {
  it('numbers the channels as the server does', () => {
    assert.deepEqual(execChannels, execChannel);
  });

  it('encodes frames the server parses', () => {
    const parsed = parseExecFrame(Buffer.from(encodeExecFrame(execChannels.stdin, 'ls\r')));
    assert.equal(parsed?.channel, execChannel.stdin);
    assert.equal(parsed?.payload.toString(), 'ls\r');
    const resize = parseExecFrame(Buffer.from(resizeFrame(120, 40)));
    assert.equal(resize?.channel, execChannel.resize);
    assert.deepEqual(JSON.parse(resize?.payload.toString() ?? ''), { cols: 120, rows: 40 });
  });

  it('decodes what the server sends: output, the exit code, an error; ignores the rest', () => {
    const out = decodeExecFrame(execFrame(execChannel.stdout, 'hello'));
    assert.equal(out.kind, 'output');
    assert.equal(out.kind === 'output' ? Buffer.from(out.bytes).toString() : '', 'hello');
    assert.equal(decodeExecFrame(execFrame(execChannel.stderr, 'e')).kind, 'output');
    assert.deepEqual(decodeExecFrame(execFrame(execChannel.exit, '{"exit_code":42}')), {
      kind: 'exit',
      code: 42,
    });
    assert.deepEqual(decodeExecFrame(execFrame(execChannel.exit, 'garbage')), { kind: 'exit', code: -1 });
    assert.deepEqual(decodeExecFrame(execFrame(execChannel.error, '{"code":"conflict","message":"gone"}')), {
      kind: 'error',
      message: 'gone',
    });
    assert.deepEqual(decodeExecFrame(new Uint8Array()), { kind: 'ignored' });
    assert.deepEqual(decodeExecFrame(execFrame(execChannel.resize, '{}')), { kind: 'ignored' });
  });

  it('opens the socket on the page origin with the matching scheme', () => {
    assert.equal(execSocketUrl('http://h:8080/console/x', '/v1/exec/t1'), 'ws://h:8080/v1/exec/t1');
    assert.equal(execSocketUrl('https://h/console/', '/v1/exec/t2'), 'wss://h/v1/exec/t2');
  });
});
