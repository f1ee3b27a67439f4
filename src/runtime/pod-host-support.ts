/**
 * The host-side pieces a pod needs besides its image: the lock waits of `stop`/`waitExit` and the
 * `/etc` files a pod's bind mounts start from.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tryLock } from './flock.js';

export function hostsFile(hostname: string): string {
  return `127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t${hostname}\n`;
}

export function hostResolvConf(): string {
  try {
    return readFileSync('/etc/resolv.conf', 'utf8');
  } catch {
    return '';
  }
}

/**
 * Retries a non-blocking lock for up to `ms`, yielding to the event loop between tries: the
 * shared lock in the way may be this very process's (a waiter about to unlock).
 */
export async function tryLockFor(fd: number, mode: 'shared' | 'exclusive', ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (tryLock(fd, mode)) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * A bounded blocking wait for a shared lock on the open directory `fd`. A flock(2) blocked on
 * libuv's thread pool cannot be cancelled, and a process cannot exit while one is pending, so a
 * wait with a deadline blocks in util-linux's flock(1) instead: it sleeps in the kernel and gives
 * up at the deadline. flock(1) is handed the fd, never the path: given a path it creates a file
 * there when nothing is, and a pod dir that moved on meanwhile left an empty file at its old
 * name, which every later `list` tripped over. The lock flock(1) takes belongs to the open file
 * description it shares with `fd`, so it lasts until the caller unlocks or closes `fd`.
 */
export function waitLockWithTimeout(fd: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const child = spawn('flock', ['--shared', '--wait', String(timeoutMs / 1000), '3'], {
      stdio: ['ignore', 'ignore', 'pipe', fd],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('error', reject);
    // 0 = granted; 1 = timed out (flock's default conflict code); anything else is its error.
    child.once('close', (code) => {
      if (code === 0 || code === 1) resolve(code === 0);
      else reject(new Error(`flock(1) exited ${code}: ${stderr.trim()}`));
    });
  });
}
