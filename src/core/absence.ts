/**
 * How berth tells "the record is not there" from "the read failed". A read that fails because the
 * store is unreachable must not look like an absent record: a rep that took an outage for "no
 * ActualLRP" would think a fresh container orphaned and kill it. So absence is exactly one code,
 * `not_found`, and every helper here rethrows anything else.
 */
import { type ErrorCode, isBerthError } from './berth-error.js';

/** Whether `err` says the thing asked for does not exist. */
export function isNotFound(err: unknown): boolean {
  return isBerthError(err) && err.code === 'not_found';
}

/**
 * The codes with which a write loses a race: someone else changed, removed, created or moved the
 * record first. The caller's plan is stale, not wrong: it drops the action and re-plans from a
 * fresh read on its next pass. One set for every component, so "lost the race" means one thing.
 */
export const supersededCodes: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'cas_conflict',
  'not_found',
  'already_exists',
  'conflict',
  'illegal_transition',
]);

/** Whether `err` says another actor got there first (see `supersededCodes`). */
export function isSuperseded(err: unknown): boolean {
  return isBerthError(err) && supersededCodes.has(err.code);
}

/** The read's value, or `undefined` when it failed with not_found; every other failure propagates. */
export async function orAbsent<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
