export * from './cell.js';
export * from './cell-history.js';
export * from './crash-policy.js';
export * from './reconcile-table.js';
export * from './rep.js';
export * from './rep-api.js';
export * from './rep-client.js';
export * from './rep-server.js';
