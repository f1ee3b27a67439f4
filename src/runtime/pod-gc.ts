import { closeSync, statSync, unlinkSync } from 'node:fs';
import { errnoCode } from '../core/index.js';
import { isGoneCode, openDirFd, tryLock } from './flock.js';
import { listedLeftovers } from './pod-leftovers.js';
import type { PodRuntime } from './pod-runtime.js';
import { type PodPhase, podPhases } from './pod-state.js';

export interface GcOptions {
  /** How long a marked exited pod stays queryable (from the moment it was marked). */
  readonly gracePeriodMs: number;
  /** How long a prepared pod may wait for run-prepared before it is discarded. */
  readonly expirePreparedMs: number;
  readonly markOnly?: boolean;
  readonly now?: Date;
}

export interface GcReport {
  /** run/ → exited-garbage/ */
  readonly marked: string[];
  /** prepare/ (failed), prepared/ (expired), embryo/ (stale) → garbage/ */
  readonly discarded: string[];
  readonly deleted: string[];
  /** `phase/uuid` entries with a pod's name that were no directory (`PodStore.listStray`), removed. */
  readonly strays: string[];
}

/**
 * Runs `fn` with a non-blocking lock on a pod dir. Skips (returns false) when the lock is held
 * or the directory moved away: both mean another actor is on it, which is normal.
 */
function withLock(path: string, mode: 'shared' | 'exclusive', fn: () => void): boolean {
  let fd: number;
  try {
    fd = openDirFd(path);
  } catch (err) {
    if (isGoneCode(errnoCode(err))) return false;
    throw err;
  }
  try {
    if (!tryLock(fd, mode)) return false;
    fn();
    return true;
  } finally {
    closeSync(fd);
  }
}

/**
 * How long ago the directory entered its phase. The kernel stamps ctime from a finer clock than
 * Date's whole milliseconds (multigrain timestamps), so a rename made this very millisecond can
 * read up to 1 ms in the future; such an age is 0, or a grace period of 0 would skip what this
 * run has just marked.
 */
function ageMs(path: string, now: Date): number | undefined {
  try {
    return Math.max(0, now.getTime() - statSync(path).ctime.getTime());
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * The seed's mark-and-sweep. Pass 1 marks by rename, under a shared lock (so it never marks a
 * running pod); pass 2 deletes under an exclusive lock after the grace period, measured from the
 * directory's ctime, which the mark's rename updated. Concurrent gc runs and `status` calls are
 * safe: every step is a try-lock or a rename whose loser sees ENOENT and moves on.
 */
export function collectGarbage(runtime: PodRuntime, options: GcOptions): GcReport {
  const store = runtime.store;
  store.ensureDirs();
  const now = options.now ?? new Date();
  const report: GcReport = { marked: [], discarded: [], deleted: [], strays: [] };
  const moveUnder = (
    uuid: string,
    from: PodPhase,
    to: PodPhase,
    mode: 'shared' | 'exclusive',
    list: string[],
  ) => {
    let moved = false;
    withLock(store.path({ uuid, phase: from }), mode, () => {
      moved = store.move({ uuid, phase: from }, to);
    });
    if (moved) list.push(uuid);
  };

  // Pass 1: mark.
  for (const uuid of store.listPhase('run'))
    moveUnder(uuid, 'run', 'exited-garbage', 'shared', report.marked);
  for (const uuid of store.listPhase('prepare'))
    moveUnder(uuid, 'prepare', 'garbage', 'shared', report.discarded);
  for (const uuid of store.listPhase('prepared')) {
    const age = ageMs(store.path({ uuid, phase: 'prepared' }), now);
    if (age !== undefined && age >= options.expirePreparedMs) {
      moveUnder(uuid, 'prepared', 'garbage', 'exclusive', report.discarded);
    }
  }
  for (const uuid of store.listPhase('embryo')) {
    const age = ageMs(store.path({ uuid, phase: 'embryo' }), now);
    if (age !== undefined && age >= options.gracePeriodMs) {
      moveUnder(uuid, 'embryo', 'garbage', 'exclusive', report.discarded);
    }
  }
  if (options.markOnly) return report;

  // Pass 2: sweep. Ages are measured now, after marking: a grace period of 0 sweeps what this
  // run marked, and a pod marked by a concurrent gc a moment ago is never swept early.
  const sweepNow = options.now ?? new Date();
  const leftovers = listedLeftovers(store.dirs);
  const sweep = (uuid: string, phase: PodPhase) => {
    if (
      withLock(store.path({ uuid, phase }), 'exclusive', () => runtime.destroy({ uuid, phase }, leftovers))
    ) {
      report.deleted.push(uuid);
    }
  };
  for (const uuid of store.listPhase('exited-garbage')) {
    const age = ageMs(store.path({ uuid, phase: 'exited-garbage' }), sweepNow);
    if (age !== undefined && age >= options.gracePeriodMs) sweep(uuid, 'exited-garbage');
  }
  for (const uuid of store.listPhase('garbage')) sweep(uuid, 'garbage');
  for (const phase of podPhases) {
    for (const uuid of store.listStray(phase)) {
      try {
        unlinkSync(store.path({ uuid, phase }));
        report.strays.push(`${phase}/${uuid}`);
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw err; // a concurrent gc took it
      }
    }
  }
  return report;
}
