export { type CellCompanion, type CellOptions, type RunningCell, repTokenPath, startCell } from './cell.js';
export { CellHistory } from './cell-history.js';
export {
  type CrashHistory,
  type CrashOutcome,
  type CrashPolicy,
  crashRestartDueAt,
  defaultCrashPolicy,
  nextCrashState,
  resetWindowMs,
  restartDelay,
  shouldRestartCrashed,
  validateCrashPolicy,
} from './crash-policy.js';
export type { LogLine } from './log-lines.js';
export {
  type LRPActualCase,
  type LRPContainerCase,
  type LRPReconcileInput,
  type LRPReconcileRow,
  type LRPRepAction,
  type LRPRowAction,
  lrpReconcileTable,
  matchLRPRow,
  reconcileLRP,
  stillDeletesContainer,
} from './reconcile-table.js';
export {
  type RelationSource,
  RelationSync,
  type RelationSyncOptions,
  relationsFileName,
  serverRelations,
  type UnitRelations,
} from './relation-sync.js';
export { Rep, type RepOptions } from './rep.js';
export type { RepLRPWork, RepState, RepStopRequest, RepTaskWork, RepWork, RepWorkResult } from './rep-api.js';
export { type RepApi, RepClient, type RepClientOptions, repClientForCell } from './rep-client.js';
export type { TaskOutputUploader } from './rep-context.js';
export type { ExecSpec } from './rep-exec.js';
export { buildRepApp } from './rep-server.js';
export { openRepExec, type RepLogQuery, repLogLines } from './rep-stream-client.js';
export { deliverTaskOutputs } from './task-output-delivery.js';
export {
  containerVanishedReason,
  matchTaskRow,
  reconcileTask,
  type TaskCase,
  type TaskContainerCase,
  type TaskReconcileRow,
  type TaskRepAction,
  type TaskRowAction,
  taskReconcileTable,
} from './task-reconcile-table.js';
