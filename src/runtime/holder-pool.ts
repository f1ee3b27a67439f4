import { closeSync } from 'node:fs';
import { Socket } from 'node:net';
import { nativeAddon } from './native-addon.js';
import type { NativeChild } from './native-process.js';

/**
 * Stage-1 holders a long-lived process (a cell's executor) reuses from pod to pod, so that a pod's
 * start does not start a node process: a node's start and its load of the holder's bundle were
 * ~30 ms of the ~125 ms of CPU a tiny task costs the machine (docs/performance.md, round 21).
 *
 * Each holder serves one pod at a time, exactly as a holder of its own would (stage1-holder-main.ts,
 * `--serve`): the pod is handed over on the holder's control socket (fd 3) as a line of JSON and
 * four fds passed with it, the pod's lock, its answer pipe (holder-pipe.ts), its log (the holder's
 * stdout and stderr meanwhile) and a done pipe. The holder closes the done pipe once the pod is
 * torn down and its lock closed, after writing `reuse` if it will take another pod; a holder that
 * dies closes it too, as it drops the lock, so the pod's end is heard either way. A holder left
 * idle longer than `idleMs`, or beyond `maxIdle`, gets its control socket closed and exits.
 *
 * The crash story is the single holder's: kill -9 of a holder kills the pod it serves (its
 * watcher kills the app and records why) and nothing else; a dead cell closes every control
 * socket, and its holders finish their pods and exit.
 */
export interface HolderPoolOptions {
  /** Starts a holder in serve mode with `controlFd` as its fd 3. */
  readonly spawn: (controlFd: number) => NativeChild;
  /** Idle holders kept (default 8). */
  readonly maxIdle?: number;
  /** How long an idle holder is kept (default 30 s). */
  readonly idleMs?: number;
}

/** What a pooled holder is given for one pod. */
export interface HolderJob {
  readonly dataDir: string;
  readonly uuid: string;
  readonly remove: boolean;
}

/** One pod handed to a holder. */
export interface HolderRun {
  readonly pid: number;
  /** The holder's answers (holder-pipe.ts), for `readHolderAnswer`. */
  readonly answers: Socket | undefined;
  /** Settles once the holder is done with the pod (torn down, lock closed) or dead. */
  readonly ended: Promise<void>;
}

interface Host {
  readonly child: NativeChild;
  /** Our end of its control socket; undefined once closed. */
  control: number | undefined;
  alive: boolean;
  idleTimer?: NodeJS.Timeout;
}

/** Starts a pod's holder (holder-start.ts): a new process each time, or a pooled one. */
export interface HolderStarter {
  /** `lockFd` and `logFd` stay the caller's to close: the holder has its own copies. */
  run(job: HolderJob, lockFd: number, logFd: number): HolderRun;
  /** Lets idle holders go; holders serving pods finish them and then go. */
  close(): void;
}

export class HolderPool implements HolderStarter {
  readonly #options: HolderPoolOptions;
  readonly #idle: Host[] = [];
  #closed = false;

  constructor(options: HolderPoolOptions) {
    this.#options = options;
  }

  /**
   * Hands the pod to an idle holder, or to a new one. `lockFd` and `logFd` stay the caller's to
   * close (the holder has its own copies once this returns).
   */
  run(job: HolderJob, lockFd: number, logFd: number): HolderRun {
    const addon = nativeAddon();
    const message = Buffer.from(`${JSON.stringify(job)}\n`);
    const [answersRead, answersWrite] = addon.pipe();
    const [doneRead, doneWrite] = addon.pipe();
    let host: Host | undefined;
    try {
      for (;;) {
        const reused = this.#takeIdle();
        host = reused ?? this.#spawn();
        try {
          addon.sendFds(host.control as number, message, [lockFd, answersWrite, logFd, doneWrite]);
          break;
        } catch (err) {
          // An idle holder that died meanwhile (EPIPE): the next one, or a new one. A new one
          // that cannot be reached is a failure of the start.
          this.#retire(host);
          if (!reused) throw err;
        }
      }
    } catch (err) {
      for (const fd of [answersRead, doneRead]) closeSync(fd);
      throw err;
    } finally {
      // The holder has its copies: ours would keep the pipes open after it closed them.
      for (const fd of [answersWrite, doneWrite]) closeSync(fd);
    }
    const serving = host;
    const answers = new Socket({ fd: answersRead, readable: true, writable: false });
    const done = new Socket({ fd: doneRead, readable: true, writable: false });
    // As a holder's exit watch: the caller's process is not kept running for the pod's end.
    done.unref();
    const ended = new Promise<void>((resolve) => {
      let text = '';
      done.on('data', (chunk: Buffer) => {
        text += chunk.toString();
      });
      done.on('close', () => {
        if (text === 'reuse\n' && serving.alive) this.#release(serving);
        else this.#retire(serving);
        resolve();
      });
    });
    return { pid: serving.child.pid, answers, ended };
  }

  /** Lets every idle holder go; holders serving pods finish them and then go. */
  close(): void {
    this.#closed = true;
    for (const host of this.#idle.splice(0)) this.#retire(host);
  }

  #takeIdle(): Host | undefined {
    for (let host = this.#idle.pop(); host; host = this.#idle.pop()) {
      clearTimeout(host.idleTimer);
      if (host.alive) return host;
      this.#retire(host);
    }
    return undefined;
  }

  #spawn(): Host {
    const [mine, theirs] = nativeAddon().socketpair();
    let child: NativeChild;
    try {
      child = this.#options.spawn(theirs);
    } catch (err) {
      closeSync(mine);
      throw err;
    } finally {
      closeSync(theirs);
    }
    const host: Host = { child, control: mine, alive: true };
    void child.exited.then(() => {
      host.alive = false;
      this.#forget(host);
    });
    return host;
  }

  #release(host: Host): void {
    if (this.#closed || this.#idle.length >= (this.#options.maxIdle ?? 8)) {
      this.#retire(host);
      return;
    }
    host.idleTimer = setTimeout(() => this.#forget(host), this.#options.idleMs ?? 30_000);
    host.idleTimer.unref();
    this.#idle.push(host);
  }

  /** Takes it off the idle list (if there) and retires it. */
  #forget(host: Host): void {
    const at = this.#idle.indexOf(host);
    if (at >= 0) this.#idle.splice(at, 1);
    this.#retire(host);
  }

  /** Closes our end of its control socket: an idle holder exits, a serving one after its pod. */
  #retire(host: Host): void {
    clearTimeout(host.idleTimer);
    if (host.control === undefined) return;
    closeSync(host.control);
    host.control = undefined;
  }
}
