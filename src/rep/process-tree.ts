import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { procStatFields } from '../core/index.js';

/** The direct children of a process (every thread's), from /proc; none once it is gone. */
export function childPids(pid: number): number[] {
  const children: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return children; // catch-all: a process that exited meanwhile has no children to list
  }
  for (const task of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (text) children.push(...text.split(/\s+/).map(Number));
    } catch {
      // catch-all: the thread ended between the listing and the read
    }
  }
  return children;
}

/** A process and all its descendants, parents before children. */
export function processTree(pid: number): number[] {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...childPids(tree[i] ?? 0));
  return tree;
}

/**
 * SIGKILL for a process and everything below it. An exec's command runs under `runc exec`, which
 * forwards the signals it gets but cannot forward SIGKILL, and a shell ignores SIGTERM: the whole
 * tree must go. Listing the tree and then killing it leaks a child forked between the two (a shell
 * running `sleep 100 &`): it outlives its parent, reparented to the container's init. So the tree is
 * frozen first: SIGSTOP to every member, listed again until every member is stopped and the listing
 * finds no one new (a stopped process forks nothing), and only then SIGKILL, which ends stopped
 * processes too. A member that will not stop (uninterruptible sleep) is killed after `stopWaitMs`
 * as it is.
 */
export async function killTree(pid: number, stopWaitMs = 2_000): Promise<void> {
  const members = new Set<number>();
  const deadline = Date.now() + stopWaitMs;
  for (;;) {
    let settled = true;
    for (const member of processTree(pid)) {
      if (!members.has(member)) {
        members.add(member);
        signal(member, 'SIGSTOP');
        settled = false;
      } else if (!isStoppedOrGone(member)) settled = false;
    }
    if (settled || Date.now() > deadline) break;
    await sleep(2);
  }
  for (const member of members) signal(member, 'SIGKILL');
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // catch-all: it exited on its own meanwhile
  }
}

/** Whether a process is stopped (`T`), a zombie or dead (`Z`, `X`), or gone: none of these forks. */
function isStoppedOrGone(pid: number): boolean {
  let state: string | undefined;
  try {
    state = procStatFields(pid)[0];
  } catch {
    return true; // catch-all: it is gone (and reaped)
  }
  return state === 'T' || state === 't' || state === 'Z' || state === 'X';
}

/** The terminal a process's stdin is (`/dev/pts/N`), if it is one. */
export function stdinTerminal(pid: number): string | undefined {
  try {
    const target = readlinkSync(`/proc/${pid}/fd/0`);
    return target.startsWith('/dev/pts/') ? target : undefined;
  } catch {
    return undefined; // catch-all: gone, or not ours to read
  }
}
