import { BerthError, berthErrorFromHttp } from '../core/index.js';
import type { CellAgentTransport } from './cell-agent.js';
import type { AgentActionResult } from './cell-agent-service.js';
import type { ModelData } from './memory-model-txn-runner.js';

/** Actions per request, as the server's schema caps them. */
export const maxAgentActionsPerRequest = 1_000;

/** The server's error, with the request it answered in the message (the agent logs it). */
async function failure(method: string, url: string, res: Response): Promise<BerthError> {
  const err = berthErrorFromHttp(res.status, await res.text());
  return new BerthError(
    err.code,
    `${method} ${url}: HTTP ${res.status}: ${err.message.slice(0, 300)}`,
    err.details,
  );
}

/** The cell agents' transport over the server's HTTP API (`/v1/agents/cells/{id}/…`). */
export function httpCellAgentTransport(
  serverUrl: string,
  cellId: string,
  token?: string,
): CellAgentTransport {
  const base = `${serverUrl.replace(/\/$/, '')}/v1/agents/cells/${encodeURIComponent(cellId)}`;
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  return {
    async view() {
      const url = `${base}/model`;
      const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
      if (!res.ok) throw await failure('GET', url, res);
      return (await res.json()) as ModelData;
    },
    async act(actions) {
      const url = `${base}/actions`;
      const results: AgentActionResult[] = [];
      for (let i = 0; i < actions.length; i += maxAgentActionsPerRequest) {
        const res = await fetch(url, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ actions: actions.slice(i, i + maxAgentActionsPerRequest) }),
          signal: AbortSignal.timeout(60_000),
        });
        if (!res.ok) throw await failure('POST', url, res);
        results.push(...((await res.json()) as { results: AgentActionResult[] }).results);
      }
      return results;
    },
  };
}
