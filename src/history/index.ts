export * from './cell-event-journal.js';
export * from './container-status.js';
export * from './delivery-backoff.js';
export * from './finalization.js';
export type { HistoryDb, HistoryTables } from './history-database.js';
export * from './history-store.js';
export * from './history-types.js';
export * from './ingest-records.js';
export * from './status-mapping.js';
