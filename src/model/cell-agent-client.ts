import { BerthError, type ErrorCode, httpStatusByCode } from '../core/index.js';
import type { CellAgentTransport } from './cell-agent.js';
import type { AgentActionResult } from './cell-agent-service.js';
import type { ModelData } from './memory-model-txn-runner.js';

/** Actions per request, as the server's schema caps them. */
export const maxAgentActionsPerRequest = 1_000;

const knownCodes = new Set(Object.keys(httpStatusByCode));

async function failure(method: string, url: string, res: Response): Promise<BerthError> {
  const text = await res.text();
  let code: ErrorCode = res.status >= 500 ? 'unavailable' : 'invalid_argument';
  let message = text.slice(0, 300);
  try {
    const body = JSON.parse(text) as { code?: string; message?: string };
    if (body.code && knownCodes.has(body.code)) code = body.code as ErrorCode;
    if (body.message) message = body.message;
  } catch {
    // Not JSON (a proxy's page): the text itself says what happened.
  }
  return new BerthError(code, `${method} ${url}: HTTP ${res.status}: ${message}`);
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
