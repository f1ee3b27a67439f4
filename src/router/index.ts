export type { Balance } from './instance-picker.js';
export { createProxyServer, type ProxyOptions, type ProxyServer } from './proxy.js';
export { hostOf } from './proxy-headers.js';
export { followRoutes, type RouteFeedOptions, type RouteSource, storeRouteSource } from './route-feed.js';
export { type Endpoint, type RoutePool, type RouteSnapshot, RouteTable } from './route-table.js';
export {
  parseBalance,
  parseRouterListen,
  type RouterOptions,
  type RunningRouter,
  startRouter,
} from './router.js';
export { noRoute, RouterMetrics } from './router-metrics.js';
