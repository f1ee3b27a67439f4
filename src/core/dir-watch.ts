import { type FSWatcher, mkdirSync, watch } from 'node:fs';
import { basename } from 'node:path';
import type { Wakeup } from './service-loop.js';

interface Watched {
  readonly watcher: FSWatcher;
  broken: boolean;
}

/**
 * Rings `wakeup` whenever an entry of one of `dirs` appears, is renamed or goes, whichever
 * process did it (inotify, through fs.watch): a loop that delivers what other processes drop
 * there runs at once instead of polling. A cell polled its two drop dirs every second, and 1,000
 * simulated cells on one machine spent a fifth of a core waking up to find them empty.
 *
 * A loop that uses it keeps a safety-net interval, as every berth loop does, and calls
 * `ensure()` at the start of each round: that makes a missing dir, and watches again a dir
 * that was removed and made anew (its old watch went with it; the removal itself rang). Where
 * the kernel refuses a watch (its limit of watches reached, a file system without inotify),
 * `watching` is false and the loop should poll at its old rate.
 */
export class DirWatch {
  readonly #dirs: readonly string[];
  readonly #wakeup: Wakeup;
  readonly #watches = new Map<string, Watched>();
  #refused = false;
  #closed = false;

  constructor(dirs: readonly string[], wakeup: Wakeup) {
    this.#dirs = dirs;
    this.#wakeup = wakeup;
  }

  /** Whether every dir is watched now (as of the last `ensure`, and no watch broke since). */
  get watching(): boolean {
    return (
      !this.#refused &&
      this.#dirs.every((dir) => {
        const watched = this.#watches.get(dir);
        return watched !== undefined && !watched.broken;
      })
    );
  }

  /**
   * Makes each dir that is missing (0700) and watches each that is not watched; a round's cost
   * while every watch is intact is nothing (no stat, no mkdir).
   */
  ensure(): void {
    if (this.#closed) return;
    this.#refused = false;
    for (const dir of this.#dirs) {
      const current = this.#watches.get(dir);
      // Intact: the dir is still there (its removal or move would have broken the watch).
      if (current && !current.broken) continue;
      current?.watcher.close();
      this.#watches.delete(dir);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      try {
        this.#watches.set(dir, this.#watch(dir));
      } catch {
        // catch-all: ENOSPC (no watches left) or a file system without inotify: `watching` turns
        // false and the caller polls; the next ensure tries again.
        this.#refused = true;
      }
    }
  }

  close(): void {
    this.#closed = true;
    for (const { watcher } of this.#watches.values()) watcher.close();
    this.#watches.clear();
  }

  #watch(dir: string): Watched {
    const self = basename(dir);
    const watched: Watched = {
      // Not persistent: a watch never keeps a process alive that has nothing else to do.
      watcher: watch(dir, { persistent: false }, (_event, name) => {
        // The dir itself removed or moved (inotify names it by its own name): the kernel ends
        // this watch, and the next ensure() makes a new one. (An entry of the same name inside
        // costs a needless new watch, no more.)
        if (name === self) watched.broken = true;
        this.#wakeup.wake();
      }),
      broken: false,
    };
    const { watcher } = watched;
    watcher.on('error', () => {
      // The dir went (or the kernel dropped the watch): the next round's ensure() watches anew.
      watched.broken = true;
      this.#wakeup.wake();
    });
    return watched;
  }
}
