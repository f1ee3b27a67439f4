import type { BbsStore } from '../bbs/index.js';
import type { Executor } from '../executor/index.js';
import type { CrashPolicy } from './crash-policy.js';
import type { TaskOutputUploader } from './task-output-delivery.js';

/** What the rep's rooms (LRP actions, tasks, evacuation) act through: one cell's BBS view and executor. */
export interface RepContext {
  readonly bbs: BbsStore;
  readonly executor: Executor;
  readonly cellId: string;
  readonly policy: CrashPolicy;
  /** Where task outputs go (`task-output-delivery.ts`); absent: a task declaring outputs fails. */
  readonly taskOutputs?: TaskOutputUploader;
  /** The rep's clock (injected in tests). */
  now(): Date;
  log(message: string): void;
}
