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
  startRequestFor,
  type TaskConvergenceItem,
} from './convergence-plan.js';
export {
  type ConvergenceItemKind,
  type ConvergencePassReport,
  type ConvergerConfig,
  ConvergerService,
  type ConvergerServiceOptions,
} from './converger-service.js';
