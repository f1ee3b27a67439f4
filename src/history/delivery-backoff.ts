/**
 * Exponential back-off with full jitter, as a pure function of the attempt and a random number
 * in [0, 1): tests pass the random number and check the table exactly, without sleeping.
 */
export interface BackoffPolicy {
  readonly baseMs: number;
  readonly maxMs: number;
}

export const defaultBackoff: BackoffPolicy = { baseMs: 200, maxMs: 30_000 };

/** Delay before retry number `attempt` (1 = the first retry). */
export function backoffMs(attempt: number, random: number, policy: BackoffPolicy = defaultBackoff): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, attempt - 1));
  // Half fixed, half jitter: never zero (no hot loop), and cells that lost the server together
  // do not all come back in the same millisecond.
  return Math.round(ceiling / 2 + (ceiling / 2) * random);
}
