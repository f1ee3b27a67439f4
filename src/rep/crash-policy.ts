import type { ActualLRP, ActualLRPState } from '../bbs/index.js';
import { InvalidArgumentError } from '../core/index.js';

/**
 * DESIGN.md's crash rule ("cluster"), every duration a parameter so tests and operators can shrink
 * it. All durations are milliseconds, the unit `parseDuration` returns.
 */
export interface CrashPolicy {
  /** Wait before the first converger restart (crash 3). */
  readonly baseMs: number;
  /** The longest wait; a crash older than 2 × this resets the count. */
  readonly maxMs: number;
  /** From this crash count on, an instance is never restarted. */
  readonly maxRestarts: number;
  /** Crash counts below this are restarted at once by the rep, never entering CRASHED. */
  readonly immediateRestarts: number;
}

export const defaultCrashPolicy: CrashPolicy = {
  baseMs: 30_000,
  maxMs: 16 * 60_000,
  maxRestarts: 200,
  immediateRestarts: 3,
};

export function validateCrashPolicy(policy: CrashPolicy): CrashPolicy {
  const { baseMs, maxMs, maxRestarts, immediateRestarts } = policy;
  if (!(baseMs >= 0 && maxMs >= baseMs && Number.isFinite(maxMs))) {
    throw new InvalidArgumentError(
      `Invalid crash back-off: base ${baseMs} ms and max ${maxMs} ms must satisfy 0 ≤ base ≤ max`,
      { baseMs, maxMs },
    );
  }
  if (!(Number.isInteger(maxRestarts) && Number.isInteger(immediateRestarts) && immediateRestarts >= 0)) {
    throw new InvalidArgumentError('Invalid crash policy: restart counts must be non-negative integers', {
      maxRestarts,
      immediateRestarts,
    });
  }
  return policy;
}

/** What the rep's crash dance writes to the ActualLRP. */
export interface CrashOutcome {
  readonly crash_count: number;
  /** ISO-8601 of `now`. */
  readonly last_crashed_at: string;
  /** UNCLAIMED (restart at once) or CRASHED (the converger restarts it after the back-off). */
  readonly state: Extract<ActualLRPState, 'UNCLAIMED' | 'CRASHED'>;
  /** True with UNCLAIMED: the rep emits a start to the auctioneer at once. */
  readonly requestStart: boolean;
}

export type CrashHistory = Pick<ActualLRP, 'crash_count' | 'last_crashed_at'>;

function parseTime(iso: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new InvalidArgumentError(`Invalid timestamp "${iso}"`, { value: iso });
  return ms;
}

/** After 2 × max without a crash the instance ran long enough to deserve a clean slate. */
export function resetWindowMs(policy: CrashPolicy): number {
  return 2 * policy.maxMs;
}

/**
 * The RepCrashDance: every crash increments crash_count and sets last_crashed_at; a count below
 * `immediateRestarts` goes straight back to UNCLAIMED with a start, any other to CRASHED. A crash
 * more than 2 × max after the previous one restarts the count from 0 before incrementing.
 * `actual` is null when the BBS has no record (the table's "No ActualLRP" rows).
 */
export function nextCrashState(actual: CrashHistory | null, now: Date, policy: CrashPolicy): CrashOutcome {
  let previous = actual?.crash_count ?? 0;
  const last = actual?.last_crashed_at ?? null;
  if (last !== null && now.getTime() - parseTime(last) > resetWindowMs(policy)) previous = 0;
  const crash_count = previous + 1;
  const immediate = crash_count < policy.immediateRestarts;
  return {
    crash_count,
    last_crashed_at: now.toISOString(),
    state: immediate ? 'UNCLAIMED' : 'CRASHED',
    requestStart: immediate,
  };
}

/**
 * How long after last_crashed_at the converger restarts an instance with this crash count:
 * 0 below `immediateRestarts`, then min(base × 2^(count − immediateRestarts), max). With the
 * defaults crashes 3, 4, 5, 6, 7 wait 30 s, 1, 2, 4, 8 min and later ones 16 min.
 */
export function restartDelay(crashCount: number, policy: CrashPolicy): number {
  if (crashCount < policy.immediateRestarts) return 0;
  const exponent = crashCount - policy.immediateRestarts;
  // 2^exponent overflows to Infinity for huge counts; min() still yields max.
  return Math.min(policy.baseMs * 2 ** exponent, policy.maxMs);
}

/** When a CRASHED instance becomes restartable (epoch ms), or null if it never will be. */
export function crashRestartDueAt(actual: CrashHistory, policy: CrashPolicy): number | null {
  if (actual.crash_count >= policy.maxRestarts) return null;
  // A CRASHED record without a crash time can only come from a purged/rewritten BBS: restart now.
  if (actual.last_crashed_at === null) return Number.NEGATIVE_INFINITY;
  return parseTime(actual.last_crashed_at) + restartDelay(actual.crash_count, policy);
}

/** The converger's test: CRASHED, below maxRestarts, and its back-off has passed. */
export function shouldRestartCrashed(
  actual: CrashHistory & Pick<ActualLRP, 'state'>,
  now: Date,
  policy: CrashPolicy,
): boolean {
  if (actual.state !== 'CRASHED') return false;
  const due = crashRestartDueAt(actual, policy);
  return due !== null && now.getTime() >= due;
}
