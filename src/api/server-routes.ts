import { registerBbsRoutes, registerTaskOutputRoutes } from '../bbs/index.js';
import { registryRoutes } from '../registry/index.js';
import { agentRoutes } from './agent-routes.js';
import { redactsEnv } from './auth/auth-hook.js';
import { cellRoutes } from './cell-routes.js';
import { deployHistoryRoutes } from './deploy-history-routes.js';
import { registerHistoryRoutes } from './history-routes.js';
import { registerOperationsRoutes } from './operations-routes.js';
import { type RouteModule, servedWith } from './route-module.js';
import { systemRoutes } from './system-routes.js';
import { userWriteHistory } from './user-write-history.js';

/**
 * Every route of the server, room by room, in the order they are registered (which is also the
 * OpenAPI document's order). A module whose part this server lacks (no systems, no registry, no
 * history) registers nothing. Add a room here, and only here.
 */
export const serverRoutes: readonly RouteModule[] = [
  {
    name: 'bbs',
    register: (app, deps) =>
      registerBbsRoutes(app, {
        store: deps.store,
        allowPrivateCallbacks: deps.allowPrivateCallbacks,
        redactsEnv,
        ...(deps.eventPollMs !== undefined ? { eventPollMs: deps.eventPollMs } : {}),
        ...(deps.onEvents ? { onEvents: deps.onEvents } : {}),
        ...(deps.history ? { onUserWrite: userWriteHistory(deps.history.history, deps.history.now) } : {}),
      }),
  },
  servedWith('task-outputs', 'taskOutputs', (app, outputs, deps) =>
    registerTaskOutputRoutes(app, { store: deps.store, outputs }),
  ),
  { name: 'cells', register: (app, deps) => cellRoutes(deps.store)(app) },
  servedWith('registry', 'registry', (app, registry) => registryRoutes(app, registry)),
  servedWith('systems', 'systems', (app, systems) => systemRoutes(systems)(app)),
  servedWith('deploy history', 'systems', (app, systems) => deployHistoryRoutes(app, systems)),
  servedWith('agents', 'systems', (app, systems) => agentRoutes(systems)(app)),
  servedWith('history', 'history', (app, history, deps) =>
    registerHistoryRoutes(app, {
      ...history,
      systemOfDomain: async (domain) => (await deps.store.ownerOf({ domain })).owner,
    }),
  ),
  {
    name: 'plugins',
    register: async (app, deps) => {
      for (const plugin of deps.plugins ?? []) await plugin(app);
    },
  },
  { name: 'operations', register: registerOperationsRoutes },
];
