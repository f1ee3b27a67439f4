import type { BbsStore } from '../bbs/index.js';
import type { Executor } from '../executor/index.js';
import type { CrashPolicy } from './crash-policy.js';

/** What the rep's rooms (LRP actions, tasks, evacuation) act through: one cell's BBS view and executor. */
export interface RepContext {
  readonly bbs: BbsStore;
  readonly executor: Executor;
  readonly cellId: string;
  readonly policy: CrashPolicy;
  /** The rep's clock (injected in tests). */
  now(): Date;
  log(message: string): void;
}
