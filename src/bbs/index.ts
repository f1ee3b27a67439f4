export { actualLrpKey } from './actual-lrp-key.js';
export {
  actualLrpStates,
  actualLrpTransitions,
  assertActualLRPTransition,
  canTransitionActualLRP,
} from './actual-lrp-transitions.js';
export { BbsClient, type BbsClientOptions } from './bbs-client.js';
export type {
  AckRequestsRequest,
  ActualLRPFilter,
  ActualLRPGroup,
  ActualLRPPageKey,
  ActualLRPRef,
  BatchedStartRequest,
  BbsStore,
  CancelTaskRequest,
  CasActualLRPRequest,
  CasTaskRequest,
  CellIdRequest,
  CellPass,
  CellPassRequest,
  ClaimActualLRPRequest,
  ClaimActualLRPsRequest,
  ClaimActualLRPsResult,
  ClaimRefusal,
  CompleteTaskRequest,
  CrashActualLRPRequest,
  DesiredLRPDefinition,
  DesiredLRPFilter,
  EvacuateRunningActualLRPRequest,
  FailActualLRPRequest,
  FailTaskRequest,
  HeartbeatCellRequest,
  HeartbeatCellResponse,
  InstanceClaim,
  ListPage,
  LRPStopRequest,
  OwnerOfRequest,
  OwnerOfResult,
  ProcessGuidRequest,
  ReleaseVolumePinsRequest,
  RemoveActualLRPRequest,
  RemoveDesiredLRPRequest,
  RemoveEvacuatingActualLRPRequest,
  RetireActualLRPResult,
  StartActualLRPRequest,
  StartActualLRPsRequest,
  StartActualLRPsResult,
  StartRequestDelivery,
  StartResult,
  StartTaskRequest,
  StopRequestDelivery,
  TakeRequestsRequest,
  TakeStopRequestsRequest,
  TaskFilter,
  TaskGuidRequest,
  TaskStartRequest,
  TaskStartRequestDelivery,
  UnclaimActualLRPsRequest,
  UnclaimActualLRPsResult,
  UpdateDesiredLRPRequest,
  UpsertDomainRequest,
  VolumePin,
  VolumePinFilter,
} from './bbs-store.js';
export type {
  AcquireLeaseRequest,
  BbsEvent,
  BbsEventBody,
  BbsEventType,
  BbsSnapshot,
  ConvergenceActualLRP,
  ConvergenceSnapshot,
  Lease,
  LeaseResult,
  PruneEventsRequest,
  ReadEventsRequest,
  RecordCounts,
  ReleaseLeaseRequest,
  SettledInstances,
} from './bbs-store-log.js';
export {
  type ActualLRP,
  type ActualLRPInstanceKey,
  type ActualLRPKey,
  type ActualLRPNetInfo,
  type ActualLRPState,
  type CellCapacity,
  type CellPresence,
  type DesiredLRP,
  type DesiredLRPUpdate,
  type Domain,
  defaultWorkMemoryMb,
  type LRPStartRequest,
  type ModificationTag,
  type Monitor,
  type MonitorTiming,
  type PortMapping,
  publicCellPresence,
  type Task,
  type TaskDefinition,
  type TaskState,
} from './bbs-types.js';
export { CasConflictError, formatTag, parseTag, tagsEqual } from './cas-conflict-error.js';
export {
  type CellPacing,
  type CellPacingLimits,
  cellPacing,
  defaultCellPacing,
  heartbeatsPerTtl,
} from './cell-pacing.js';
export {
  desiredWithDefaults,
  taskWithDefaults,
  validateInstances,
  validateRoutes,
  withMonitorDefaults,
} from './definition-defaults.js';
export { type BbsOperationName, bbsOperationPaths } from './http/bbs-operations.js';
export {
  type BbsRoutesOptions,
  etag,
  type OnUserWrite,
  registerBbsRoutes,
  type UserWrite,
} from './http/bbs-routes.js';
export {
  DesiredLRPDefinitionSchema,
  DesiredLRPUpdateSchema,
  ErrorSchema,
  InstanceKeySchema,
  ModificationTagSchema,
  MonitorSchema,
  monitorTimingProperties,
  NetInfoSchema,
  operationBodies,
  PortMappingSchema,
  TaskDefinitionSchema,
} from './http/bbs-schemas.js';
export { bbsPublicOperations, type RecordPage, type TaskWithDeliveries } from './http/public-operations.js';
export {
  registerTaskOutputRoutes,
  type TaskOutputRoutesOptions,
  taskOutputPaths,
} from './http/task-output-routes.js';
export {
  type HttpRoute,
  httpRoutesKey,
  httpRoutesOf,
  isRouteHostname,
  normalizeRoutes,
  type RoutesInput,
  validateHttpRoutes,
} from './http-routes.js';
export {
  type MonitorTimingProblem,
  monitorTimingBounds,
  monitorTimingDefaults,
  monitorTimingProblems,
  validateMonitorTiming,
} from './monitor-timing.js';
export { isPostgresUrl, type OpenBbsStoreOptions, openBbsStore } from './open-bbs-store.js';
export { cellPlacementTag } from './placement-tags.js';
export {
  mainAppName,
  type PodSidecar,
  PodSidecarsSchema,
  type SidecarMount,
  SidecarMountsSchema,
  validatePodSidecars,
} from './pod-sidecars.js';
export type { BbsDatabase } from './sql/bbs-database.js';
export { bbsMigrationList } from './sql/bbs-migrations.js';
export { cellAppearedNews } from './sql/cell-store.js';
export { SqlBbsStore, type SqlBbsStoreOptions } from './sql/sql-bbs-store.js';
export { TaskOutputStore, taskOutputChunkBytes, taskOutputMigrationList } from './sql/task-output-store.js';
export {
  deliveriesOf,
  SqlTaskDeliveryLog,
  type TaskDelivery,
  type TaskDeliveryLog,
  type TaskDeliveryOutcome,
  type TaskDeliveryRecord,
  taskDeliveryLogFor,
  taskDeliveryOutcomes,
  toTaskDelivery,
} from './task-callback-log.js';
export {
  callbackBackoffMs,
  classifyCallbackStatus,
  defaultTaskCallbackConfig,
  type TaskCallbackConfig,
  type TaskCallbackPass,
  TaskCallbackWorker,
  type TaskCallbackWorkerOptions,
  taskCallbackSingleton,
} from './task-callback-worker.js';
export { TaskOutputClient } from './task-output-client.js';
export {
  maxArchiveBytes,
  OutputsMaxBytesSchema,
  type TaskOutputDeclaration,
  type TaskOutputsInfo,
  TaskOutputsSchema,
  taskOutputLimits,
  validateTaskOutputs,
} from './task-output-types.js';
export {
  assertTaskTransition,
  canTransitionTask,
  taskDeletableStates,
  taskStates,
  taskTransitions,
} from './task-transitions.js';
export {
  cellVolumeName,
  namedVolumes,
  pinnedPlacementTags,
  type VolumeMount,
  VolumeMountsSchema,
  validateVolumeMounts,
  volumeLimits,
} from './volume-mounts.js';
