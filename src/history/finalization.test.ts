import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { collectFinalization } from './finalization.js';

describe('collectFinalization', () => {
  it('keeps the end of the logs, and no outputs (the executor collects those inside the root)', async () => {
    const record = await collectFinalization({
      container_id: 'c1',
      exit_code: 0,
      readLogs: async () => 'first line\nlast line\n',
      maxLogChars: 10,
    });
    assert.equal(record.logs, 'last line\n');
    assert.equal(record.logs_truncated, true);
    assert.equal(record.logs_size, 21);
    assert.deepEqual(record.outputs, []);
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
    });
    assert.equal(record.error, 'cannot read logs: pod removed');
  });
});
