import { registerBbsRoutes } from '../bbs/index.js';
import { registryRoutes } from '../registry/index.js';
import { agentRoutes } from './agent-routes.js';
import { redactsEnv } from './auth/auth-hook.js';
import { cellRoutes } from './cell-routes.js';
import { entityRoutes } from './entity-routes.js';
import { registerHistoryRoutes } from './history-routes.js';
import { registerOperationsRoutes } from './operations-routes.js';
import { type RouteModule, servedWith } from './route-module.js';
import { systemRoutes } from './system-routes.js';

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
      }),
  },
  { name: 'cells', register: (app, deps) => cellRoutes(deps.store)(app) },
  servedWith('registry', 'registry', (app, registry) => registryRoutes(app, registry)),
  servedWith('systems', 'systems', (app, systems) => systemRoutes(systems)(app)),
  servedWith('entities', 'systems', (app, systems) => entityRoutes(systems)(app)),
  servedWith('agents', 'systems', (app, systems) => agentRoutes(systems)(app)),
  servedWith('history', 'history', (app, history) => registerHistoryRoutes(app, history)),
  {
    name: 'plugins',
    register: async (app, deps) => {
      for (const plugin of deps.plugins ?? []) await plugin(app);
    },
  },
  { name: 'operations', register: registerOperationsRoutes },
];
