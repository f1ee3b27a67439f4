import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { procStatFields } from './proc-stat.js';

describe('procStatFields', () => {
  it('starts at the state even when the command name holds spaces and parentheses', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-proc-stat-'));
    const odd = join(dir, 'a) b (c');
    copyFileSync('/bin/sleep', odd);
    const child = spawn(odd, ['3600'], { stdio: 'ignore' });
    try {
      const pid = child.pid ?? assert.fail('the copy of sleep did not start');
      process.kill(pid, 'SIGSTOP');
      let fields = procStatFields(pid);
      for (let i = 0; i < 100 && fields[0] !== 'T'; i++) {
        await sleep(10);
        fields = procStatFields(pid);
      }
      assert.equal(fields[0], 'T', 'the state of a stopped process');
      assert.equal(Number(fields[1]), process.pid, 'the parent pid comes next');
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('throws for a process that is gone', () => {
    assert.throws(() => procStatFields(2 ** 22 + 1), { code: 'ENOENT' });
  });
});
