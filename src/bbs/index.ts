export * from './actual-lrp-transitions.js';
export * from './bbs-store.js';
export * from './bbs-types.js';
export * from './cas-conflict-error.js';
export * from './open-bbs-store.js';
export type { BbsDatabase } from './sql/bbs-database.js';
export { SqlBbsStore, type SqlBbsStoreOptions } from './sql/sql-bbs-store.js';
export * from './task-transitions.js';
