import type { CellPresence } from '../bbs/index.js';
import { BerthError, type ErrorCode, httpStatusByCode } from '../core/index.js';
import type { RepState, RepStopRequest, RepWork, RepWorkResult } from './rep-api.js';

/**
 * What the auctioneer and converger need from one cell's rep (rep-api.ts). RepClient implements
 * it over HTTP; an in-process embedding or a test may pass anything of this shape.
 */
export interface RepApi {
  state(): Promise<RepState>;
  perform(work: RepWork): Promise<RepWorkResult>;
  stop(req: RepStopRequest): Promise<void>;
  evacuate(): Promise<void>;
}

export interface RepClientOptions {
  /**
   * Per-request timeout (default 10 s). A timeout is `unavailable`: the auctioneer skips the cell
   * for this round rather than waiting on it, so one slow cell cannot stall every placement.
   */
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
  /** The rep's token (`CellPresence.rep_token`), sent as `Authorization: Bearer`. */
  readonly token?: string;
}

/**
 * The rep's HTTP API as seen by the auctioneer and converger. Every failure to get an answer
 * (refused connection, timeout, 5xx, a body that is not the contract's JSON) is a BerthError
 * `unavailable`, which is retryable: the caller tries again on its next round. A 4xx carrying a
 * berth error body keeps that error's code, since repeating the same request will not help.
 */
export class RepClient implements RepApi {
  readonly baseUrl: string;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #authorization: Record<string, string>;

  constructor(baseUrl: string, options: RepClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#fetch = options.fetch ?? fetch;
    this.#authorization = options.token ? { authorization: `Bearer ${options.token}` } : {};
  }

  state(): Promise<RepState> {
    return this.#call<RepState>('GET', '/v1/state', undefined);
  }

  perform(work: RepWork): Promise<RepWorkResult> {
    return this.#call<RepWorkResult>('POST', '/v1/work', work);
  }

  async stop(req: RepStopRequest): Promise<void> {
    await this.#call<undefined>('POST', '/v1/stop', req);
  }

  async evacuate(): Promise<void> {
    await this.#call<undefined>('POST', '/v1/evacuate', undefined);
  }

  async #call<T>(method: 'GET' | 'POST', path: string, body: unknown): Promise<T> {
    const url = `${this.baseUrl}${path}`;
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(url, {
        method,
        ...(body !== undefined
          ? {
              headers: { ...this.#authorization, 'content-type': 'application/json' },
              body: JSON.stringify(body),
            }
          : { headers: this.#authorization }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      // Read the body under the same timeout: a rep that sends headers and then stalls is as
      // unavailable as one that never answers.
      text = await response.text();
    } catch (err) {
      throw new BerthError('unavailable', `Cannot reach the rep at ${this.baseUrl}: ${describe(err)}`, {
        url,
      });
    }
    if (!response.ok) throw errorFrom(url, response.status, text);
    if (response.status === 204 || response.status === 202 || text === '') return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new BerthError('unavailable', `Cannot read the answer of the rep at ${url}: not JSON`, {
        url,
        status: response.status,
      });
    }
  }
}

/** The client for a cell's rep, at the address and with the token of its presence record. */
export function repClientForCell(cell: CellPresence, options: RepClientOptions = {}): RepClient {
  return new RepClient(cell.rep_url, {
    ...options,
    ...(cell.rep_token !== undefined ? { token: cell.rep_token } : {}),
  });
}

function errorFrom(url: string, status: number, text: string): BerthError {
  let body: { code?: unknown; message?: unknown; details?: unknown } = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null) body = parsed as typeof body;
  } catch {
    // catch-all: not a berth error body (a proxy's HTML page, say); the status decides.
  }
  const message = typeof body.message === 'string' ? body.message : `HTTP ${status}`;
  const details = {
    ...(typeof body.details === 'object' && body.details !== null
      ? (body.details as Record<string, unknown>)
      : {}),
    url,
    status,
  };
  // 5xx is the rep failing, not the request being wrong: retryable on the next round.
  if (status >= 500) return new BerthError('unavailable', `The rep at ${url} failed: ${message}`, details);
  // A refused token is a cell that restarted with a new one and has not heartbeat it yet (or an
  // impostor at a stale address): the next round reads the presence again, so retry then.
  if (status === 401)
    return new BerthError('unavailable', `The rep at ${url} refused the cell's token: ${message}`, details);
  const code =
    typeof body.code === 'string' && body.code in httpStatusByCode
      ? (body.code as ErrorCode)
      : (codeByStatus.get(status) ?? 'internal');
  return new BerthError(code, message, details);
}

const codeByStatus = new Map<number, ErrorCode>(
  (Object.entries(httpStatusByCode) as [ErrorCode, number][]).map(([code, status]) => [status, code]),
);

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}
