import { registerBbsRoutes, registerTaskOutputRoutes } from '../bbs/index.js';
import { isTerminalStatus } from '../history/index.js';
import { registryRoutes } from '../registry/index.js';
import { agentRoutes } from './agent-routes.js';
import { redactsEnv, stillAuthorized } from './auth/auth-hook.js';
import { cellRoutes } from './cell-routes.js';
import { deployHistoryRoutes } from './deploy-history-routes.js';
import { entityRoutes } from './entity-routes.js';
import { registerExecRoutes } from './exec-routes.js';
import { registerHistoryRoutes } from './history-routes.js';
import { registerLogStreamRoutes } from './log-stream-routes.js';
import { registerOperationsRoutes } from './operations-routes.js';
import { type RouteDeps, type RouteModule, servedWith } from './route-module.js';
import { type OnSystemAction, systemActionHistory } from './system-action-history.js';
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
        stillAuthorized,
        ...(deps.eventPollMs !== undefined ? { eventPollMs: deps.eventPollMs } : {}),
        ...(deps.eventReauthMs !== undefined ? { reauthMs: deps.eventReauthMs } : {}),
        ...(deps.onEvents ? { onEvents: deps.onEvents } : {}),
        ...(deps.headEventId ? { headEventId: deps.headEventId } : {}),
        ...(deps.history ? { onUserWrite: userWriteHistory(deps.history.history, deps.history.now) } : {}),
      }),
  },
  servedWith('task-outputs', 'taskOutputs', (app, outputs, deps) =>
    registerTaskOutputRoutes(app, { store: deps.store, outputs }),
  ),
  { name: 'cells', register: (app, deps) => cellRoutes(deps.store)(app) },
  servedWith('registry', 'registry', (app, registry) => registryRoutes(app, registry)),
  servedWith('systems', 'systems', (app, systems, deps) => systemRoutes(systems, systemActionsOf(deps))(app)),
  servedWith('deploy history', 'systems', (app, systems, deps) =>
    deployHistoryRoutes(app, systems, systemActionsOf(deps)),
  ),
  servedWith('entities', 'systems', (app, systems) => entityRoutes(systems)(app)),
  servedWith('agents', 'systems', (app, systems) => agentRoutes(systems)(app)),
  servedWith('history', 'history', (app, history, deps) =>
    registerHistoryRoutes(app, {
      ...history,
      systemOfDomain: async (domain) => (await deps.store.ownerOf({ domain })).owner,
    }),
  ),
  {
    name: 'logs and exec',
    register: async (app, deps) => {
      const history = deps.history?.history;
      registerLogStreamRoutes(app, {
        store: deps.store,
        onEvents: deps.onEvents,
        finalizedLog: history
          ? async (guid) => {
              const [logs, record] = await Promise.all([history.getLogs(guid), history.getContainer(guid)]);
              // Not finalized yet: the cell's error (the container is gone) says what happened.
              if (!isTerminalStatus(record.status)) return undefined;
              return { text: logs.text, ts: record.status_time };
            }
          : undefined,
      });
      registerExecRoutes(app, {
        store: deps.store,
        history: deps.history ? { history: deps.history.history, now: deps.history.now } : undefined,
      });
    },
  },
  {
    name: 'plugins',
    register: async (app, deps) => {
      for (const plugin of deps.plugins ?? []) await plugin(app);
    },
  },
  { name: 'operations', register: registerOperationsRoutes },
];

/** Accepted system actions go into the history of the containers they touch, when there is one. */
function systemActionsOf(deps: RouteDeps): OnSystemAction | undefined {
  return deps.history ? systemActionHistory(deps.history.history, deps.store, deps.history.now) : undefined;
}
