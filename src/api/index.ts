export * from './api-metrics.js';
export * from './auth-hook.js';
export * from './auth-token-store.js';
export * from './bbs-server.js';
export * from './build-app.js';
export * from './history-routes.js';
export * from './singleton-lease.js';
export * from './cluster-singletons.js';
