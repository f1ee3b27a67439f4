import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { markUnchanged } from '../../core/index.js';
import type { BbsStore } from '../bbs-store.js';
import { publicCellPresence } from '../bbs-types.js';
import { type BbsOperationName, bbsOperationPaths } from './bbs-operations.js';
import { taskCallbackCheck } from './bbs-route-support.js';
import type { BbsRoutesOptions } from './bbs-routes-options.js';
import { operationBodies } from './bbs-schemas.js';

/** One POST route per store operation, for reps, auctioneer and converger. */
export function registerInternalRoutes(root: FastifyInstance, options: BbsRoutesOptions): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const { store } = options;
  const checkTaskCallback = taskCallbackCheck(options);
  for (const name of Object.keys(bbsOperationPaths) as BbsOperationName[]) {
    app.post(
      bbsOperationPaths[name],
      { schema: { tags: ['internal'], summary: `BbsStore.${name}`, body: operationBodies[name] } },
      async (request, reply: FastifyReply) => {
        if (name === 'desireTask') checkTaskCallback(request.body as { completion_callback_url?: string });
        const operation = store[name] as (req: unknown) => Promise<unknown>;
        const result = await operation.call(store, request.body ?? {});
        if (changesNothing(name, result)) markUnchanged(request);
        if (result === undefined) return reply.code(204).send();
        // A bare string (headEventId) is JSON too: fastify would send it as text/plain, and '' as no body.
        if (typeof result === 'string') return reply.type('application/json').send(JSON.stringify(result));
        const hide = withoutRepTokens[name];
        return reply.send(hide ? hide(result) : result);
      },
    );
  }
}

/**
 * Whether an operation's successful answer changed nothing an operator follows: reads, a
 * heartbeat (a presence that begins or changes is its own event on the log), a take that found
 * nothing. These are logged at debug (src/api/build-app.ts).
 */
function changesNothing(name: BbsOperationName, result: unknown): boolean {
  if (/^(list|get|read|head|count|owner)/.test(name) || name === 'heartbeatCell') return true;
  if (name === 'cellPass') return (result as { stops: readonly unknown[] }).stops.length === 0;
  return /^take/.test(name) && Array.isArray(result) && result.length === 0;
}

/**
 * The operations whose answers carry cell presences, and how to drop the reps' tokens from them:
 * those tokens are for the server's own auctioneer and converger, never for a caller of the API
 * (a viewer with a rep's token could evacuate its cell). The BBS contract (`hidesRepTokens`) checks every route.
 */
const withoutRepTokens: Partial<Record<BbsOperationName, (result: unknown) => unknown>> = {
  heartbeatCell: (r) => publicCellPresence(r as Awaited<ReturnType<BbsStore['heartbeatCell']>>),
  listCells: (r) => (r as Awaited<ReturnType<BbsStore['listCells']>>).map(publicCellPresence),
  readSnapshot: (r) => {
    const snapshot = r as Awaited<ReturnType<BbsStore['readSnapshot']>>;
    return { ...snapshot, cells: snapshot.cells.map(publicCellPresence) };
  },
  readConvergenceSnapshot: (r) => {
    const snapshot = r as Awaited<ReturnType<BbsStore['readConvergenceSnapshot']>>;
    return { ...snapshot, cells: snapshot.cells.map(publicCellPresence) };
  },
};
