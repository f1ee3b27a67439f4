import { closeSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { nativeAddon } from './native-addon.js';

/**
 * Child processes through berth's addon (posix_spawn, and a pidfd on node's event loop) instead
 * of node:child_process, for the pod paths: stage 1's runc and watcher, the CNI plugins, the
 * detached holder. node's spawn forks the whole node process (1.5–3 ms each on the development
 * machine, growing with the heap) and loading node:child_process costs ~1.8 ms more, on the path
 * of every `berth run`.
 */

/** How a process ended: its exit code, or the number of the signal that killed it. */
export interface ProcessEnd {
  readonly code: number | null;
  readonly signal: number | null;
}

/**
 * What the child gets as fd i: one of ours (it is duplicated), /dev/null, or a new pipe. A piped
 * fd 0 hands us the pipe's write end (`stdin`); any other piped fd a socket reading it (`pipes`).
 */
export type ChildFd = number | 'null' | 'pipe';

export interface NativeChild {
  readonly pid: number;
  /** Settles once the child has exited (and is reaped). */
  readonly exited: Promise<ProcessEnd>;
  /** Write end of a piped fd 0 (ours to write and close). */
  readonly stdin?: number;
  /** Readers of the child's other piped fds, by fd number (stdout is 1, stderr 2). */
  readonly pipes: ReadonlyMap<number, Socket>;
}

export interface NativeSpawnOptions {
  readonly stdio: readonly ChildFd[];
  /** setsid(2) in the child: its own session and process group (node's `detached`). */
  readonly newSession?: boolean;
  /**
   * Every child is reaped and its end reported; 'ref' (the default) keeps node's event loop alive
   * until then, 'unref' does not (node's `child.unref()`).
   */
  readonly watch?: 'ref' | 'unref';
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Starts `file` (looked up on PATH) with `args` as argv[1…]. Throws the errno error (ENOENT when
 * there is no such program) if it could not be started; nothing is left open then.
 */
export function spawnNative(file: string, args: readonly string[], options: NativeSpawnOptions): NativeChild {
  const addon = nativeAddon();
  // Our end of each piped fd, by the child's fd number; the child's ends, to close once it has them.
  const mine = new Map<number, number>();
  const theirs: number[] = [];
  const fds = options.stdio.map((fd, index): number => {
    if (fd === 'null') return -1;
    if (fd !== 'pipe') return fd;
    const [readEnd, writeEnd] = addon.pipe();
    const [keep, give] = index === 0 ? [writeEnd, readEnd] : [readEnd, writeEnd];
    mine.set(index, keep);
    theirs.push(give);
    return give;
  });
  const environment = Object.entries(options.env ?? process.env).flatMap(([key, value]) =>
    value === undefined ? [] : [`${key}=${value}`],
  );
  let pid: number;
  try {
    pid = addon.spawnProcess(file, [file, ...args], environment, fds, options.newSession ?? false);
  } catch (err) {
    for (const fd of [...mine.values(), ...theirs]) closeSync(fd);
    throw err;
  }
  // The child has its copies; ours of its ends would keep a pipe open after it exits.
  for (const fd of theirs) closeSync(fd);
  const pipes = new Map<number, Socket>();
  for (const [index, fd] of mine)
    if (index > 0) pipes.set(index, new Socket({ fd, readable: true, writable: false }));
  const keepAlive = (options.watch ?? 'ref') === 'ref';
  const exited = new Promise<ProcessEnd>((resolve) =>
    addon.watchExit(pid, (code, signal) => resolve({ code, signal }), keepAlive),
  );
  return { pid, pipes, exited, ...optional('stdin', mine.get(0)) };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** Writes `text` to a child's stdin pipe and closes it; a child that is already gone is no error. */
export function endStdin(fd: number, text: string): void {
  try {
    writeSync(fd, text);
  } catch {
    // EPIPE: the reader exited first.
  }
  closeSync(fd);
}

/** Random bytes from getrandom(2). */
export function randomBytes(length: number): Buffer {
  return nativeAddon().randomBytes(length);
}

/** A random (version 4) UUID, as crypto.randomUUID makes, without loading node:crypto. */
export function randomUuid(): string {
  const bytes = randomBytes(16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
