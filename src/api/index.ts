export * from './api-metrics.js';
export * from './bbs-server.js';
export * from './build-app.js';
export * from './singleton-lease.js';
