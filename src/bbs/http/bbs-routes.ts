import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { BbsRoutesOptions } from './bbs-routes-options.js';
import { registerClusterRoutes } from './cluster-routes.js';
import { registerEventRoutes } from './event-routes.js';
import { registerInternalRoutes } from './internal-routes.js';
import { registerLrpRoutes } from './lrp-routes.js';
import { registerTaskRoutes } from './task-routes.js';

export { etag } from './bbs-route-support.js';
export type { BbsRoutesOptions } from './bbs-routes-options.js';
export type { OnUserWrite, UserWrite } from './user-writes.js';

/**
 * The BBS's HTTP API: the public routes of issue 3 (snake_case JSON, ETag/If-Match on
 * DesiredLRPs) and one internal POST route per store operation for reps, auctioneer and converger.
 */
export async function registerBbsRoutes(root: FastifyInstance, options: BbsRoutesOptions): Promise<void> {
  registerLrpRoutes(root, options);
  registerTaskRoutes(root, options);
  registerClusterRoutes(root, options);
  registerInternalRoutes(root, options);
  registerEventRoutes(root.withTypeProvider(), options);
}
