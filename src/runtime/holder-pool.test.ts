import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { busyboxResolver } from '../testing/busybox-image.js';
import { isLocked } from './flock.js';
import { collectGarbage } from './pod-gc.js';
import { readLogTail } from './pod-log-reader.js';
import { PodRuntime } from './pod-runtime.js';

/**
 * Pooled stage-1 holders (holder-pool.ts) against real runc: a holder serves pods one after
 * another, and each pod ends as under a holder of its own (its exit record, its log, its lock
 * free when its end is heard); kill -9 of a holder ends its pod alone.
 */
const images = busyboxResolver();
const dirs: string[] = [];

function newRuntime(): PodRuntime {
  const dir = mkdtempSync(join(tmpdir(), 'berth-holder-pool-'));
  dirs.push(dir);
  return new PodRuntime(dir, images, { holderPool: true });
}

after(() => {
  for (const dir of dirs) {
    collectGarbage(new PodRuntime(dir, images), { gracePeriodMs: 0, expirePreparedMs: 0 });
    rmSync(dir, { recursive: true, force: true });
  }
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`never: ${what}`);
}

/** Runs one pod detached to its end; what its end looked like when it was heard. */
async function runPod(runtime: PodRuntime, args: string[]) {
  const prepared = await runtime.prepare('bb', { args, net: 'none' });
  assert.ok(runtime.store.move(prepared.location, 'run'));
  const location = { uuid: prepared.location.uuid, phase: 'run' as const };
  const path = runtime.store.path(location);
  let lockedAtEnd: boolean | undefined;
  let started: Promise<void> | undefined;
  const ended = new Promise<void>((resolve) => {
    started = runtime.startDetached(location, prepared.lockFd, {
      onExit: () => {
        lockedAtEnd = isLocked(path);
        resolve();
      },
    });
  });
  // Started: the holder answered (holder-pipe.ts), and its pid is written.
  await started;
  const holderPid = Number(readFileSync(join(path, 'holder.pid'), 'utf8'));
  return { uuid: location.uuid, path, holderPid, ended: ended.then(() => lockedAtEnd) };
}

describe('pooled stage-1 holders', () => {
  it('one holder serves pods one after another, each ending as under a holder of its own', async (t) => {
    const runtime = newRuntime();
    // The pool's watches do not keep this process running (as for a cell).
    const keepAlive = setInterval(() => {}, 1000);
    t.after(() => clearInterval(keepAlive));
    const holders: number[] = [];
    for (const i of [0, 1, 2]) {
      const pod = await runPod(runtime, ['sh', '-c', `echo pod-${i}; exit ${i + 3}`]);
      assert.equal(await pod.ended, false, `pod ${i} was unlocked when its end was heard`);
      holders.push(pod.holderPid);
      const info = runtime.status(pod.uuid);
      assert.equal(info.state, 'exited');
      assert.equal(info.exit?.exit_code, i + 3);
      const log = readLogTail(pod.path).text;
      assert.match(log, new RegExp(`pod-${i}`));
      assert.doesNotMatch(log, new RegExp(`pod-${(i + 1) % 3}`), "another pod's output is not in this log");
    }
    assert.equal(new Set(holders).size, 1, `one holder served all three (${holders.join(', ')})`);
    const holder = holders[0] as number;
    assert.ok(alive(holder), 'the holder waits for the next pod');
    // Its control socket (fd 3) is close-on-exec (O_CLOEXEC, octal 02000000, in fdinfo's flags),
    // though posix_spawn's dup2 handed it over inheritable: node marks the fds it inherits so at
    // its start. No command the holder runs for a pod (`spawnSync` of mount, runc kill) holds it.
    const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/${holder}/fdinfo/3`, 'utf8'))?.[1];
    assert.ok(flags !== undefined && (Number.parseInt(flags, 8) & 0o2000000) !== 0, `fd 3 flags ${flags}`);
    runtime.closeHolders();
    await until(() => !alive(holder), 'the idle holder ends once the pool lets it go');
  });

  it('kill -9 of a holder ends the pod it serves, and the next pod gets a new holder', async (t) => {
    const runtime = newRuntime();
    const keepAlive = setInterval(() => {}, 1000);
    t.after(() => {
      clearInterval(keepAlive);
      runtime.closeHolders();
    });
    const first = await runPod(runtime, ['sh', '-c', 'echo warm']);
    await first.ended;
    const pod = await runPod(runtime, ['sleep', '1000']);
    assert.equal(pod.holderPid, first.holderPid, 'the idle holder took the pod');
    await until(() => runtime.status(pod.uuid).state === 'running', 'the pod runs');
    process.kill(pod.holderPid, 'SIGKILL');
    // Heard at once, as a holder of its own's death is: the watcher still ends the app then.
    await pod.ended;
    await until(() => runtime.status(pod.uuid).exit !== undefined, "the watcher ends the holder's pod");
    assert.equal(runtime.status(pod.uuid).state, 'exited');
    assert.equal(runtime.status(pod.uuid).exit?.exit_code, 137);
    const next = await runPod(runtime, ['true']);
    await next.ended;
    assert.notEqual(next.holderPid, pod.holderPid, 'a new holder');
    assert.equal(runtime.status(next.uuid).exit?.exit_code, 0);
  });
});
