export { ApiMetrics } from './api-metrics.js';
export { type AppAuth, installAuth, redactsEnv, requiredRole, userOf } from './auth/auth-hook.js';
export { type Principal, type Role, roleAllows, roles } from './auth/roles.js';
export {
  adminTokenPath,
  type CreatedToken,
  hashToken,
  openTokenAuth,
  type TokenAuth,
  type TokenAuthenticator,
  type TokenInfo,
  TokenStore,
} from './auth/token-store.js';
export { type BbsServer, type BbsServerOptions, parseListen, startBbsServer } from './berth-server.js';
export { type AppDeps, buildApp } from './build-app.js';
export { type ClusterTimings, clusterSingletons } from './cluster-singletons.js';
export { consolePlugin } from './console-routes.js';
export { type HistoryRoutesOptions, type IngestBodyType, registerHistoryRoutes } from './history-routes.js';
export {
  createHistoryServerParts,
  type HistoryParts,
  type HistoryServerParts,
  openHistory,
} from './history-server-parts.js';
export { type RouteDeps, type RouteModule, servedWith } from './route-module.js';
export { serverRoutes } from './server-routes.js';
export { type Singleton, SingletonLease, type SingletonLeaseOptions } from './singleton-lease.js';
