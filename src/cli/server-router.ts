import type { SqlBbsStore } from '../bbs/index.js';
import { parseRouterListen, type RunningRouter, startRouter, storeRouteSource } from '../router/index.js';
import { booleanOption, type OptionValues, stringOption } from './command.js';

/**
 * The router `berth server` and `berth up` run beside the server (issue 22), on the server's own
 * store (no token: it is the same process). `--router-listen` chooses where; by default
 * 127.0.0.1:8890, or port 0 on the server's host when the server itself asked for port 0 (tests
 * and scripts running many servers). A default address that is taken is a warning, not a failed
 * server; an address given is a failure. `--no-router`: none.
 */
export async function startServerRouter(
  values: OptionValues,
  store: SqlBbsStore,
  serverListen: string,
  warn: (line: string) => void,
): Promise<RunningRouter | undefined> {
  if (booleanOption(values, 'no-router')) return undefined;
  const given = stringOption(values, 'router-listen');
  const server = parseRouterListen(serverListen);
  const listen = given ?? (server.port === 0 ? `${serverListen.replace(/:\d+$/, '')}:0` : '127.0.0.1:8890');
  const source = storeRouteSource(store, (listener) => store.onEvents(listener));
  try {
    return await startRouter({ source, listen });
  } catch (err) {
    if (given !== undefined || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    warn(`router not started: ${listen} is in use (--router-listen to choose another, --no-router for none)`);
    return undefined;
  }
}
