import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pidsWithCmdline } from '../testing/processes-by-cmdline.js';
import { waitUntil } from '../testing/simulated-cluster.js';
import { killTree, processTree } from './process-tree.js';

describe('killTree', () => {
  it('leaves nothing of a tree whose shell forks all the time: what it forks while being killed dies too', {
    timeout: 60_000,
  }, async () => {
    // A unique sleep length marks this test's processes; a leaked one would sleep for an hour.
    const marker = `3600.${randomBytes(4).readUInt32BE()}`;
    const shell = spawn('sh', ['-c', `while :; do sleep ${marker} & done`], { stdio: 'ignore' });
    const pid = shell.pid ?? assert.fail('sh did not start');
    try {
      await waitUntil(
        'the shell to have forked 50 sleeps',
        async () => pidsWithCmdline(marker).length >= 50,
        10_000,
        5,
      );
      const exited = once(shell, 'exit');
      await killTree(pid);
      await exited;
      assert.deepEqual(processTree(pid), [pid], 'the shell is gone, and with it its children list');
      // A SIGKILLed process may take a moment to end; one that escaped never does.
      const deadline = Date.now() + 5_000;
      while (pidsWithCmdline(marker).length > 0 && Date.now() < deadline) await sleep(50);
      assert.deepEqual(pidsWithCmdline(marker), [], 'no sleep forked by the shell is left');
    } finally {
      for (const leaked of pidsWithCmdline(marker)) process.kill(leaked, 'SIGKILL');
      shell.kill('SIGKILL');
    }
  });

  it('kills a tree that is already stopped, and a process with no children', async () => {
    const stopped = spawn('sleep', ['3600'], { stdio: 'ignore' });
    const lone = spawn('sleep', ['3600'], { stdio: 'ignore' });
    const stoppedPid = stopped.pid ?? assert.fail('sleep did not start');
    const lonePid = lone.pid ?? assert.fail('sleep did not start');
    process.kill(stoppedPid, 'SIGSTOP');
    const ends = [once(stopped, 'exit'), once(lone, 'exit')];
    await Promise.all([killTree(stoppedPid), killTree(lonePid)]);
    assert.deepEqual(
      (await Promise.all(ends)).map(([, signal]) => signal),
      ['SIGKILL', 'SIGKILL'],
    );
  });
});
