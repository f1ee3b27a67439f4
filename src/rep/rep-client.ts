import type { CellPresence } from '../bbs/index.js';
import { BerthError, HttpJsonClient, type PeerClientOptions } from '../core/index.js';
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

/**
 * The per-request timeout defaults to 10 s. A timeout is `unavailable`: the auctioneer skips the
 * cell for this round rather than waiting on it, so one slow cell cannot stall every placement.
 * The token is the rep's (`CellPresence.rep_token`).
 */
export type RepClientOptions = PeerClientOptions;

/**
 * The rep's HTTP API as seen by the auctioneer and converger. Every failure to get an answer
 * (refused connection, timeout, 5xx, a body that is not the contract's JSON) is a BerthError
 * `unavailable`, which is retryable: the caller tries again on its next round. A 4xx carrying a
 * berth error body keeps that error's code, since repeating the same request will not help.
 */
export class RepClient implements RepApi {
  readonly baseUrl: string;
  readonly #http: HttpJsonClient;

  constructor(baseUrl: string, options: RepClientOptions = {}) {
    this.#http = new HttpJsonClient(baseUrl, {
      timeoutMs: 10_000,
      ...options,
      peer: 'the rep',
      mapError: retryableRepFailure,
    });
    this.baseUrl = this.#http.baseUrl;
  }

  state(): Promise<RepState> {
    return this.#http.request<RepState>('GET', '/v1/state');
  }

  perform(work: RepWork): Promise<RepWorkResult> {
    return this.#http.request<RepWorkResult>('POST', '/v1/work', { body: work });
  }

  async stop(req: RepStopRequest): Promise<void> {
    await this.#http.request('POST', '/v1/stop', { body: req });
  }

  async evacuate(): Promise<void> {
    await this.#http.request('POST', '/v1/evacuate');
  }
}

/** The client for a cell's rep, at the address and with the token of its presence record. */
export function repClientForCell(cell: CellPresence, options: RepClientOptions = {}): RepClient {
  return new RepClient(cell.rep_url, {
    ...options,
    ...(cell.rep_token !== undefined ? { token: cell.rep_token } : {}),
  });
}

/**
 * The rep's policy over the one mapping: a 5xx is the rep failing, not the request being wrong, so
 * it is retryable on the next round; so is a refused token (a cell that restarted with a new one
 * and has not heartbeat it yet, or an impostor at a stale address: the next round reads the
 * presence again). A 4xx keeps the code the body or status gave it.
 */
function retryableRepFailure(err: BerthError, status: number, url: string): BerthError {
  const details = { ...err.details, url, status };
  if (status >= 500)
    return new BerthError('unavailable', `The rep at ${url} failed: ${err.message}`, details);
  if (status === 401)
    return new BerthError(
      'unavailable',
      `The rep at ${url} refused the cell's token: ${err.message}`,
      details,
    );
  return new BerthError(err.code, err.message, details);
}
