import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { collectFinalization } from './finalization.js';

describe('collectFinalization', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-final-'));
    writeFileSync(join(dir, 'result.txt'), '42\n');
    writeFileSync(join(dir, 'big.bin'), Buffer.alloc(100));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the end of the logs and collects outputs', async () => {
    const record = await collectFinalization({
      container_id: 'c1',
      exit_code: 0,
      readLogs: async () => 'first line\nlast line\n',
      maxLogChars: 10,
      maxInlineOutputBytes: 10,
      outputs: [
        { name: 'result', path: join(dir, 'result.txt') },
        { name: 'big', path: join(dir, 'big.bin') },
      ],
    });
    assert.equal(record.logs, 'last line\n');
    assert.equal(record.logs_truncated, true);
    assert.equal(record.logs_size, 21);
    assert.deepEqual(
      record.outputs.map((o) => [o.name, o.size, o.content]),
      [
        ['result', 3, '42\n'],
        ['big', 100, null],
      ],
    );
    assert.equal(record.error, null);
  });

  it('a bounded tail of a log keeps the size on disk and says it was cut', async () => {
    const tail = { text: 'the end\n', size: 20 * 1024 * 1024, truncated: true };
    const record = await collectFinalization({
      container_id: 'c1',
      exit_code: 0,
      readLogs: async () => tail,
    });
    assert.equal(record.logs, 'the end\n');
    assert.equal(record.logs_size, 20 * 1024 * 1024);
    assert.equal(record.logs_truncated, true);
    const whole = await collectFinalization({
      container_id: 'c1',
      exit_code: 0,
      readLogs: async () => ({ text: 'all\n', size: 4, truncated: false }),
    });
    assert.equal(whole.logs_truncated, false);
  });

  it('reports what could not be finalized instead of throwing', async () => {
    const record = await collectFinalization({
      container_id: 'c1',
      exit_code: 0,
      readLogs: async () => {
        throw new Error('pod removed');
      },
      outputs: [{ name: 'missing', path: join(dir, 'nope') }],
    });
    assert.match(record.error ?? '', /^cannot read logs: pod removed; cannot collect output "missing"/);
  });
});
