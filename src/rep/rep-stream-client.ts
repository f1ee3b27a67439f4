import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { WebSocket } from 'ws';
import type { CellPresence } from '../bbs/index.js';
import { BerthError, berthErrorFromHttp } from '../core/index.js';
import type { LogLine } from './log-lines.js';
import { type ExecSpec, execQuery } from './rep-exec.js';

export interface RepLogQuery {
  readonly follow?: boolean;
  readonly tail?: number | undefined;
  readonly since_ms?: number | undefined;
  /** One app of a pod of several (a pod sidecar); absent: the pod's own app. */
  readonly app?: string;
}

function authHeaders(cell: CellPresence): Record<string, string> {
  return cell.rep_token !== undefined ? { authorization: `Bearer ${cell.rep_token}` } : {};
}

/**
 * One container's log lines from its cell's rep (`GET /v1/containers/:guid/logs`, NDJSON), as
 * they come; the generator ends with the stream (the container stopped) or when `signal` aborts.
 * A container the cell does not have is `not_found`; an unreachable rep `unavailable`.
 */
export async function* repLogLines(
  cell: CellPresence,
  guid: string,
  query: RepLogQuery,
  signal: AbortSignal,
): AsyncGenerator<LogLine> {
  const q = new URLSearchParams();
  if (query.follow) q.set('follow', 'true');
  if (query.tail !== undefined) q.set('tail', String(query.tail));
  if (query.since_ms !== undefined) q.set('since_ms', String(query.since_ms));
  if (query.app !== undefined) q.set('app', query.app);
  const url = `${cell.rep_url}/v1/containers/${encodeURIComponent(guid)}/logs?${q}`;
  let res: Response;
  try {
    res = await fetch(url, { headers: authHeaders(cell), signal });
  } catch (err) {
    if (signal.aborted) return;
    throw new BerthError('unavailable', `Cannot reach the rep of cell ${cell.cell_id}: ${String(err)}`);
  }
  if (!res.ok || !res.body) {
    // catch-all: a body cut off mid-read still leaves the status to report
    const body = await res.text().catch(() => '');
    throw berthErrorFromHttp(res.status, body);
  }
  const lines = createInterface({
    input: Readable.fromWeb(res.body as never),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  try {
    for await (const text of lines) if (text) yield JSON.parse(text) as LogLine;
  } catch (err) {
    if (!signal.aborted)
      throw new BerthError('unavailable', `The log stream of cell ${cell.cell_id} broke: ${String(err)}`);
  } finally {
    lines.close();
  }
}

/**
 * Opens the rep's exec WebSocket (rep-exec.ts) and resolves once it is open. A refusal (404, 409)
 * rejects with the rep's error.
 */
export function openRepExec(cell: CellPresence, spec: ExecSpec): Promise<WebSocket> {
  const url = `${cell.rep_url.replace(/^http/, 'ws')}/v1/exec?${execQuery(spec)}`;
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: authHeaders(cell), perMessageDeflate: false });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        reject(berthErrorFromHttp(res.statusCode ?? 502, Buffer.concat(chunks).toString())),
      );
    });
    ws.once('error', (err) =>
      reject(new BerthError('unavailable', `Cannot reach the rep of cell ${cell.cell_id}: ${err.message}`)),
    );
  });
}
