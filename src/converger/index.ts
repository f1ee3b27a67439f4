export type { ConvergenceCounts, ConvergenceItemKind } from './convergence-applier.js';
export {
  type ConvergenceConfig,
  type ConvergenceInput,
  type ConvergencePlan,
  cellDisappearedReason,
  defaultConvergenceConfig,
  type LRPConvergenceItem,
  mergeStartRequests,
  pendingExpiredReason,
  planConvergence,
  planLostCells,
  startRequestFor,
  type TaskConvergenceItem,
} from './convergence-plan.js';
export {
  type ConvergencePassReport,
  type ConvergerConfig,
  ConvergerService,
  type ConvergerServiceOptions,
} from './converger-service.js';
