export * from './atomic-write.js';
export * from './berth-error.js';
export * from './bounded-schemas.js';
export * from './duration.js';
export * from './limits.js';
export * from './remove-tree.js';
export * from './request-guards.js';
