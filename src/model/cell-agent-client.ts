import { BerthError, HttpJsonClient, type ServerUrls } from '../core/index.js';
import type { CellAgentTransport } from './cell-agent.js';
import type { AgentActionResult } from './cell-agent-service.js';
import type { ModelData } from './memory-model-txn-runner.js';

/** Actions per request, as the server's schema caps them. */
export const maxAgentActionsPerRequest = 1_000;

/** The cell agents' transport over the server's HTTP API (`/v1/agents/cells/{id}/…`). */
export function httpCellAgentTransport(
  serverUrl: ServerUrls,
  cellId: string,
  token?: string,
): CellAgentTransport {
  const http = new HttpJsonClient(serverUrl, { token, mapError: withRequestInMessage });
  const base = `/v1/agents/cells/${encodeURIComponent(cellId)}`;
  return {
    view: () => http.request<ModelData>('GET', `${base}/model`, { timeoutMs: 10_000 }),
    async act(actions) {
      const results: AgentActionResult[] = [];
      for (let i = 0; i < actions.length; i += maxAgentActionsPerRequest) {
        const answer = await http.request<{ results: AgentActionResult[] }>('POST', `${base}/actions`, {
          body: { actions: actions.slice(i, i + maxAgentActionsPerRequest) },
          timeoutMs: 60_000,
        });
        results.push(...answer.results);
      }
      return results;
    },
  };
}

/** The server's error, with the request it answered in the message (the agent logs it). */
function withRequestInMessage(err: BerthError, status: number, url: string): BerthError {
  return new BerthError(err.code, `${url}: HTTP ${status}: ${err.message.slice(0, 300)}`, err.details);
}
