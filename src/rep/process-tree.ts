import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

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
 * forwards the signals it gets but cannot forward SIGKILL, and a shell ignores SIGTERM: killing the
 * whole tree, as listed before the first kill, is what leaves nothing behind when a client goes.
 */
export function killTree(pid: number): void {
  for (const member of processTree(pid).reverse()) {
    try {
      process.kill(member, 'SIGKILL');
    } catch {
      // catch-all: it exited on its own meanwhile
    }
  }
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
