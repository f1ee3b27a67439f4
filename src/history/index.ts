export {
  CellEventJournal,
  type CellEventJournalOptions,
  type CellObservation,
  type DeliveryLoopOptions,
  deliveryBackoff,
} from './cell-event-journal.js';
export {
  canonicalTimestamp,
  compareIds,
  compareItems,
  dedupeKey,
  effectiveTime,
  foldStatus,
  type StatusItem,
  stepStatus,
  type TopLevelStatus,
} from './container-status.js';
export {
  directPodDirs,
  factsOf,
  historyIdOf,
  noteExit,
  noteExitedPods,
  noteLaunch,
  noteObituaries,
  noteStart,
  noteUserStop,
  type PodFacts,
  podDropbox,
} from './direct-pod-history.js';
export { collectFinalization, type FinalizeInput, type LogTailRead } from './finalization.js';
export { HistoryClient, type HistoryClientOptions } from './history-client.js';
export type { HistoryDb, HistoryTables } from './history-database.js';
export { historyMigrationList } from './history-migrations.js';
export { ContainerListQuery, type CreatedToken, historyOperations } from './history-operations.js';
export {
  type ContainerLogs,
  type ContainerPage,
  type ContainerStatusEvent,
  containerEventType,
  HistoryStore,
  type HistoryStoreOptions,
  type ListContainersRequest,
} from './history-store.js';
export {
  type ContainerLaunch,
  type ContainerOutput,
  type ContainerRecord,
  type ContainerStatus,
  type ContainerWithHistory,
  type EntityType,
  entityTypes,
  type HistoryItem,
  type NewHistoryItem,
  type OwnerKind,
  ownerKinds,
} from './history-types.js';
export type {
  EventRecord,
  FinalizationRecord,
  IngestRecord,
  IngestResult,
  ItemRecord,
  LaunchRecord,
} from './ingest-records.js';
export { RecordDropbox } from './record-dropbox.js';
export {
  dockerEventStatuses,
  finalStatusFor,
  friendlyStatuses,
  isTerminalStatus,
  mapRawStatus,
  statusMappingTable,
  swarmTaskStates,
  terminalStatuses,
} from './status-mapping.js';
export {
  localUser,
  readStopRequest,
  type StopRequest,
  stopRequestFile,
  writeStopRequest,
} from './stop-request.js';
export { recordUserAction, recordUserActions, type UserAction } from './user-actions.js';
export {
  type Delivery,
  type DeliveryState,
  type Subscription,
  type SubscriptionWithDeliveries,
  type WebhookOptions,
  WebhookSubscriptions,
} from './webhook-subscriptions.js';
