export * from './atomic-write.js';
export * from './berth-error.js';
export * from './callback-target.js';
export * from './duration.js';
export * from './env-redaction.js';
export * from './list-page.js';
export * from './private-dir.js';
export * from './remove-tree.js';
