import type { BbsStore } from '../bbs/index.js';
import type { CellExecutor } from '../executor/index.js';
import type { CrashPolicy } from './crash-policy.js';
import type { StartWrites } from './start-writes.js';

/** What the rep's rooms (LRP actions, tasks, evacuation) act through: one cell's BBS view and executor. */
export interface RepContext {
  readonly bbs: BbsStore;
  readonly executor: CellExecutor;
  readonly cellId: string;
  readonly policy: CrashPolicy;
  /** Starts (CAS to RUNNING) go through here, batched while one is in flight. */
  readonly starts: StartWrites;
  /** Where task outputs go (`task-output-delivery.ts`); absent: a task declaring outputs fails. */
  readonly taskOutputs?: TaskOutputUploader;
  /** The rep's clock (injected in tests). */
  now(): Date;
  log(message: string): void;
}

/** Where the cell's task archives go: the server that keeps them (`TaskOutputClient`). */
export interface TaskOutputUploader {
  upload(taskGuid: string, cellId: string, archive: string, sha256: string): Promise<unknown>;
}
