/**
 * Moved to core/service-loop.ts; this re-export keeps the auctioneer and converger compiling until
 * their loops move onto core (issue 18). `retryDelayMs` is the old name of the doubling back-off.
 */
import { backoffDelayMs } from '../core/index.js';

export {
  describeError,
  forEachLimited,
  LocalLoop,
  type ServiceLogger,
  type SingletonContext,
  silentLogger,
  sleep,
} from '../core/index.js';

/** A retry delay after `failures` consecutive failed rounds: doubling from 250 ms, capped. */
export function retryDelayMs(failures: number, capMs: number): number {
  return backoffDelayMs(failures, { initialMs: 250, capMs });
}
