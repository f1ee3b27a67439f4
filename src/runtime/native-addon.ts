import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { BerthError } from '../core/index.js';

/**
 * berth's native addon (native/berth_native.c): the Linux system calls Node has no binding for.
 * Errors carry the errno's name as `code` (ENOENT, EEXIST …), as Node's fs errors do.
 */
export interface BerthNative {
  /** An fd of the directory through a detached read-only copy of its mount (confined-dir.ts). */
  openConfinedDir(path: string): number;
  /** `ip netns add`: a new network namespace bind-mounted on `dir/name`. EEXIST if it is there. */
  createNetns(dir: string, name: string): void;
  /** `ip netns del`: unmounts and removes it; a missing one is no error. */
  deleteNetns(path: string): void;
  /** flock(2) now: LOCK_SH|LOCK_EX|LOCK_UN, with LOCK_NB a try that fails with EAGAIN. */
  flock(fd: number, operation: number): void;
  /** flock(2) blocking, on a thread of libuv's pool; the callback gets null once it is held. */
  flockWait(fd: number, operation: number, callback: (err: NodeJS.ErrnoException | null) => void): void;
  /**
   * posix_spawnp(3) of `file` with `args` (argv[0] included) and `env` ("K=V"); fds[i] becomes
   * the child's fd i (-1: /dev/null), every other fd is closed. Returns the pid.
   */
  spawnProcess(
    file: string,
    args: readonly string[],
    env: readonly string[],
    fds: readonly number[],
    newSession: boolean,
  ): number;
  /**
   * Calls back from the event loop once the child has exited, after reaping it. With keepAlive
   * false the watch does not hold the event loop open (node's `child.unref()`).
   */
  watchExit(
    pid: number,
    callback: (code: number | null, signal: number | null) => void,
    keepAlive?: boolean,
  ): void;
  /** pipe2(O_CLOEXEC): [read end, write end]. */
  pipe(): [number, number];
  /** socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC): two connected ends. */
  socketpair(): [number, number];
  /** sendmsg(2) of `data` (not empty) with up to 8 open fds (SCM_RIGHTS), all of it or an error. */
  sendFds(socket: number, data: Buffer, fds: readonly number[]): void;
  /** recvmsg(2), blocking: a message and the fds it carried (close-on-exec); null at the end. */
  recvFds(socket: number): { readonly data: Buffer; readonly fds: readonly number[] } | null;
  /** dup2(2). */
  dupTo(from: number, to: number): void;
  /** getrandom(2): 1 to 256 bytes. */
  randomBytes(length: number): Buffer;
  /** getxattr(2) (a last symlink followed): the value (at most 255 bytes), or null if it has none. */
  getxattr(path: string, name: string): string | null;
  /**
   * sendfile(2) of `length` bytes of `fileFd` from `offset` to the socket `socketFd`, on a thread
   * of its own over dups of both fds (either may be closed meanwhile), waiting for room in the
   * socket at most `idleTimeoutMs` at a time (then ETIMEDOUT). The callback gets the error that
   * stopped it (EPIPE, ECONNRESET …) or null, and the bytes sent: fewer without an error when the
   * file ended first. Null when too many sends are under way (the caller sends the bytes itself).
   */
  sendFile(
    socketFd: number,
    fileFd: number,
    offset: number,
    length: number,
    idleTimeoutMs: number,
    callback: (err: NodeJS.ErrnoException | null, sent: number) => void,
  ): NativeFileSend | null;
  /** Ends a send early: shuts the socket down (both ways), which stops it with EPIPE. */
  sendFileCancel(send: NativeFileSend): void;
}

/** A send under way (an opaque handle for sendFileCancel). */
export type NativeFileSend = { readonly __nativeFileSend: unique symbol };

// build/ is beside dist/; this module sits in dist/runtime/ (the bundles give it that same URL),
// so the addon is two levels up either way.
const addonPath = new URL('../../build/Release/berth_native.node', import.meta.url).pathname;
let addon: BerthNative | undefined;

/** The addon, or undefined when it has not been built (callers with a fallback of their own). */
export function builtNativeAddon(): BerthNative | undefined {
  return addon ?? (existsSync(addonPath) ? nativeAddon() : undefined);
}

export function nativeAddon(): BerthNative {
  if (addon) return addon;
  if (!existsSync(addonPath))
    throw new BerthError(
      'internal',
      `berth's native addon is missing (${addonPath}): run \`npm run build\` in berth's directory`,
    );
  addon = createRequire(import.meta.url)(addonPath) as BerthNative;
  return addon;
}
