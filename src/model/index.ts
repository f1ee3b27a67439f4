export { defaultOwner } from './action-runner.js';
export {
  type ActionState as LifecycleActionState,
  actionStateTransitions,
  isLiveAction,
} from './action-states.js';
export {
  type AgentAction,
  type AgentStep,
  agentActionCell,
  agentActionTxn,
  cellAgentStep,
  provisionerStep,
  unitAgentStep,
} from './agent-rules.js';
export {
  CellAgent,
  type CellAgentOptions,
  type CellAgentPass,
  type CellAgentTransport,
  decideCellAgents,
} from './cell-agent.js';
export { httpCellAgentTransport, maxAgentActionsPerRequest } from './cell-agent-client.js';
export { type AgentActionResult, applyCellAgentActions, cellAgentView } from './cell-agent-service.js';
export {
  addCell,
  assignUnitToCell,
  destroyCell,
  ensureCellDead,
  moveUnitToCell,
  removeCell,
} from './cell-rules.js';
export {
  type CleanupOptions,
  type CleanupRunReport,
  cleanupStep,
  defaultCleanupBatchSize,
  dueCleanups,
  type RunCleanupsOptions,
  runDueCleanups,
} from './cleanup-jobs.js';
export { definitionDigest, openSecrets, sealDefinition, secretNames } from './definition-secrets.js';
export {
  type DeployRecord,
  deployHistoryOperations,
  listDeployHistory,
  pickRollbackTarget,
  type RollbackRequest,
} from './deploy-history.js';
export {
  type DeployedService,
  type DeployPlan,
  inPlaceFields,
  nextRollingStep,
  planDeploy,
  type RollingInstance,
  type RollingStep,
  type ServiceChange,
  specVersion,
  versionFields,
} from './deploy-plan.js';
export {
  type EntityActionKind,
  entityActionKinds,
  isEntityActionKind,
  type LockingActionKind,
} from './entity-action-kinds.js';
export { entityOperations } from './entity-operation-table.js';
export { EntityOperations } from './entity-operations.js';
export { forcedCellSkips, forcedUnitSkips, precheckEntityRequest } from './entity-plan.js';
export type { EntityRequest } from './entity-requests.js';
export {
  instanceKey,
  isServiceOf,
  jobTaskGuid,
  jobVersion,
  modelServiceName,
  parseUnitName,
  servicePathOf,
  serviceProcessGuid,
  sidecarUnitGuid,
  sidecarUnitIndex,
  systemDomain,
  systemLabel,
  systemOfDomain,
  unitLabel,
  unitName,
  unitOfInstance,
} from './instance-names.js';
export {
  assertLifeMove,
  canMoveLife,
  type EntityKind,
  entityKinds,
  type Life,
  type LifeStep,
  lifeRank,
  lifeSteps,
  lifeTransitions,
  lives,
  livesOf,
} from './life.js';
export {
  checkLocks,
  type LifecycleAction,
  type LockCheck,
  type LockMode,
  type LockRequest,
  type LockRow,
  lockCompatibility,
  lockModes,
  lockRowsFor,
  planLocks,
  releaseLocks,
} from './lock-table.js';
export {
  MemoryModel,
  MemoryModelTxnRunner,
  type ModelData,
  type TxnRunnerStats,
} from './memory-model-txn-runner.js';
export {
  LockHeldError,
  type LockHolder,
  ModelRuleError,
  NameInUseError,
  TxnAbortedError,
} from './model-errors.js';
export { type SettleOptions, type SettleReport, settleModel } from './model-settler.js';
export { type ModelTxnRunner, type RunTxnOptions, runTxn } from './model-txn-runner.js';
export type {
  Assert,
  CellDoc,
  CleanupJob,
  CleanupKind,
  CountKind,
  EntityRef,
  ModelTxn,
  ModelView,
  Op,
  RelationDoc,
  RelationScope,
  ServiceDoc,
  UnitDoc,
} from './model-types.js';
export {
  type RelationPeer,
  relationEnv,
  type UnitAddress,
  type UnitRelation,
  type UnitRelationData,
  unitRelationData,
} from './relation-data.js';
export {
  addRelation,
  destroyRelation,
  destroyRelationPart,
  enterScope,
  leaveScope,
  scopePeers,
  scopesToEnter,
  unitFitsRelation,
} from './relation-rules.js';
export type { ActionProgress } from './rollout-observe.js';
export { planRollout, planTeardown, type RolloutProgress, type RolloutVerdict } from './rollout-plan.js';
export { type SealedSecret, SecretBox, secretKeyFileName } from './secret-box.js';
export { addService, destroyService } from './service-rules.js';
export {
  addSidecarUnit,
  destroySidecarUnit,
  principalRelationOf,
  type SidecarToCreate,
  sidecarsToCreate,
  sidecarsToDestroy,
} from './sidecar-rules.js';
export {
  type ActionRow,
  type LockRowRecord,
  type ModelDatabase,
  type ModelDb,
  modelMigrationList,
  type SystemRow,
  type SystemServiceRow,
} from './sql-model-schema.js';
export {
  loadModel,
  migrateModel,
  modelLockKey,
  modelRead,
  modelWrite,
  type SqlBackend,
  SqlModelTxnRunner,
} from './sql-model-txn-runner.js';
export {
  type AcceptActionRequest,
  type ActionKind,
  type ActionRecord,
  type ActionState,
  type ActionWork,
  refused,
  SqlSystemStore,
  type SystemRecord,
} from './sql-system-store.js';
export {
  planCellRetirement,
  planScopeEntries,
  planSidecarLRPPruning,
  planSidecarLRPs,
  planSidecarUnits,
  planUnitPlacement,
  type SystemAgentAction,
  type SystemAgentSnapshot,
} from './system-agent-plan.js';
export {
  type DefinitionProblem,
  definitionDefaults,
  InvalidDefinitionError,
  type JobDefinition,
  type SecretSpec,
  type ServiceDefinition,
  type SystemDefinition,
  storedDefinitionProblems,
  validateSystemDefinition,
} from './system-definition.js';
export { parseSystemDefinition } from './system-definition-yaml.js';
export {
  type DeployRequest,
  parseDefinition,
  SystemDeployer,
  type SystemDeployerOptions,
} from './system-deployer.js';
export { type SystemSummary, systemOperations } from './system-operations.js';
export type { CellUnitRelations } from './system-relations.js';
export {
  isSidecarRecord,
  type JobRecord,
  parseServiceRow,
  parseStoredDefinition,
  type ServiceRecord,
  type SystemServiceRecord,
  serviceRowOf,
} from './system-service-record.js';
export {
  assertSystemPhaseMove,
  type InstanceObservation,
  type ServiceObservation,
  type ServiceState,
  type SystemObservation,
  type SystemPhase,
  type SystemState,
  type SystemStatus,
  serviceState,
  systemPhaseTransitions,
  systemStatus,
} from './system-status.js';
export type { RelationStatus, ServiceStatus, SystemStatusJson, UnitStatus } from './system-status-view.js';
export { ancestors, containsPath, isTreePath, segments, treePathPattern } from './tree-path.js';
export { cleanupId, relationEndpoints, relationId } from './txn-parts.js';
export {
  addUnit,
  defaultForceMaxWaitMs,
  destroyUnit,
  ensureUnitDead,
  forceDestroyUnit,
  removeUnit,
  unitDyingForService,
  unitDyingPart,
} from './unit-rules.js';
