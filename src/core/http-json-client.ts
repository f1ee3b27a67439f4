import { request as httpRequest, type RequestOptions } from 'node:http';
import type { Dispatcher } from 'undici';
import { BerthError, berthErrorFromHttp, InvalidArgumentError } from './berth-error.js';
import {
  type HttpOperation,
  type OperationAnswer,
  type OperationArgs,
  operationPath,
} from './http-operation.js';
import { sleep } from './service-loop.js';
import { parseSseBlock, type SseBlock, sseBlocks } from './sse-blocks.js';

/**
 * How a JSON request goes out. `undici` (its `request`, not `fetch`) for long-lived processes
 * (servers, cells): a JSON request through node's `fetch` cost ~0.4 ms more of the caller's CPU
 * (its Request, Response, Headers, AbortSignals and a web stream per body), and a cell sends one
 * or more a placement (docs/performance.md, round 21). `node:http` for the CLI, which pays ~1 ms
 * to load it where undici's first request loads undici, ~20 ms of a ~100 ms command.
 */
export type HttpTransport = 'undici' | 'node:http';

let processTransport: HttpTransport = 'undici';

/** Sets the transport of every client made without one in this process (the CLI: node:http). */
export function setDefaultHttpTransport(transport: HttpTransport): void {
  processTransport = transport;
}

interface UndiciParts {
  readonly request: typeof import('undici').request;
  readonly Agent: typeof import('undici').Agent;
}
/** undici, loaded at the first request that needs it (a CLI command never does). */
let undici: UndiciParts | undefined;
async function loadUndici(): Promise<UndiciParts> {
  const { request, Agent } = await import('undici');
  undici ??= { request, Agent };
  return undici;
}

/** One server's base URL, or several that serve the same API (`A,B`, or a list): failover. */
export type ServerUrls = string | readonly string[];

/** A query string's values; `undefined` leaves the key out. */
export type QueryValues = Readonly<Record<string, string | number | boolean | undefined>>;

export interface HttpJsonClientOptions {
  /** Sent as `Authorization: Bearer …`; absent when the server runs with auth none. */
  readonly token?: string | undefined;
  /** Per-request timeout, the body's read included (default 30 s); a timeout is `unavailable`. */
  readonly timeoutMs?: number;
  /** Send every request, JSON ones included, with this fetch (tests). */
  readonly fetch?: typeof fetch;
  /** How JSON requests go out when no `fetch` is given; default: the process's (`setDefaultHttpTransport`). */
  readonly transport?: HttpTransport;
  /**
   * `own`: JSON requests over undici go over one kept-alive connection of this client's own,
   * one request at a time, not the process's shared pool (the BBS client's heartbeats).
   */
  readonly connection?: 'shared' | 'own';
  /** Who answers, for messages: "the berth server", "the rep", "the BBS". */
  readonly peer?: string;
  /** Added to the message when the peer cannot be reached (e.g. how to name another server). */
  readonly unreachableHint?: string;
  /**
   * A client's own policy over the one mapping (the rep's: a 5xx is retryable). Called with the
   * error the response body and status mapped to.
   */
  readonly mapError?: (err: BerthError, status: number, url: string) => BerthError;
}

/** What a typed client (BBS, rep, history) lets its callers set; the peer and error policy are its own. */
export type PeerClientOptions = Pick<
  HttpJsonClientOptions,
  'token' | 'timeoutMs' | 'fetch' | 'unreachableHint'
>;

export interface HttpJsonRequest {
  readonly query?: QueryValues;
  /** JSON-encoded; `undefined` sends no body. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/**
 * The one HTTP JSON client of berth: base URL, bearer token, JSON in and out, a timeout, and ONE
 * way from an error response to a BerthError (`berthErrorFromHttp`: the body's code, else the
 * status's). Every client of a berth API (CLI, rep, history, BBS, cell agent) sends through it, so
 * an outage reads as `unavailable` and a refusal keeps its code everywhere alike.
 */
export class HttpJsonClient {
  readonly #baseUrls: readonly string[];
  /** The server that answered last: every request goes there first (sticky failover). */
  #current = 0;
  readonly #options: HttpJsonClientOptions;
  readonly #fetch: typeof fetch;
  /** The `own` connection's dispatcher, made at the first request. */
  #ownDispatcher: Dispatcher | undefined;

  /**
   * `baseUrl` is one server, or several (a list, or one string separated by commas: `A,B`) that
   * serve the same API: see `#onAnyServer` for how a request moves between them.
   */
  constructor(baseUrl: ServerUrls, options: HttpJsonClientOptions = {}) {
    this.#baseUrls = splitServerUrls(baseUrl);
    this.#options = options;
    this.#fetch = options.fetch ?? fetch;
  }

  /** The server requests go to now (the first until it stops answering). */
  get baseUrl(): string {
    return this.#baseUrls[this.#current]!;
  }

  /** Every server this client may use, in the order given. */
  get baseUrls(): readonly string[] {
    return this.#baseUrls;
  }

  /**
   * Runs `attempt` against the current server; when no answer comes at all (refused, reset, timed
   * out: PeerUnreachableError) it moves to the next server and tries again, once per server, and
   * stays with the one that answers. An answer that is an error (4xx, 5xx) is the server's word
   * and never moves. Not for a body that can be read only once (`retryable` false): that request
   * fails, and the next one starts on the next server.
   */
  async #onAnyServer<T>(
    attempt: () => Promise<T>,
    signal: AbortSignal | undefined,
    retryable = true,
  ): Promise<T> {
    for (let tried = 1; ; tried++) {
      const from = this.#current;
      try {
        return await attempt();
      } catch (err) {
        if (!(err instanceof PeerUnreachableError) || signal?.aborted || this.#baseUrls.length === 1)
          throw err;
        // Another request may have moved on meanwhile: move only off the server that failed.
        if (this.#current === from) this.#current = (from + 1) % this.#baseUrls.length;
        if (!retryable) throw err;
        if (tried >= this.#baseUrls.length)
          throw new PeerUnreachableError(
            `${err.message} (and none of ${this.#baseUrls.join(', ')} answered)`,
            String(err.details?.url ?? ''),
            err.cause,
          );
      }
    }
  }

  get peer(): string {
    return this.#options.peer ?? 'the berth server';
  }

  /** The bearer header, for a caller that opens its own stream (SSE). */
  authorization(): Record<string, string> {
    const token = this.#options.token;
    return token ? { authorization: `Bearer ${token}` } : {};
  }

  url(path: string, query?: QueryValues): string {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {}))
      if (value !== undefined) search.set(key, String(value));
    const qs = search.toString();
    return `${this.baseUrl}${path}${qs ? `${path.includes('?') ? '&' : '?'}${qs}` : ''}`;
  }

  /** One operation of a route table (http-operation.ts): typed params, query, body and answer. */
  call<Op extends HttpOperation<unknown, unknown, unknown, unknown>>(
    op: Op,
    ...[args]: OperationArgs<Op> extends { readonly params: unknown } | { readonly body: unknown }
      ? [OperationArgs<Op>]
      : [OperationArgs<Op>?]
  ): Promise<OperationAnswer<Op>> {
    const given = (args ?? {}) as {
      params?: Record<string, string | number>;
      query?: unknown;
      body?: unknown;
    };
    return this.request<OperationAnswer<Op>>(op.method, operationPath(op, given.params), {
      ...(given.query !== undefined ? { query: given.query as QueryValues } : {}),
      ...(given.body !== undefined ? { body: given.body } : {}),
    });
  }

  /** The decoded JSON answer; `undefined` for 204 or an empty body. */
  request<T>(method: string, path: string, req: HttpJsonRequest = {}): Promise<T> {
    return this.#onAnyServer(() => this.#requestOnce<T>(method, path, req), req.signal);
  }

  async #requestOnce<T>(method: string, path: string, req: HttpJsonRequest): Promise<T> {
    const url = this.url(path, req.query);
    const headers: Record<string, string> = {
      ...(req.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...this.authorization(),
      ...req.headers,
    };
    let answer: { status: number; text: string };
    // One deadline for the whole exchange, the body's read included: a peer that sends headers
    // and then stalls is as unavailable as one that never answers. A plain timer and controller:
    // AbortSignal.timeout and AbortSignal.any cost more than the rest of an undici request.
    const deadline = new AbortController();
    const timeoutMs = req.timeoutMs ?? this.#options.timeoutMs ?? 30_000;
    const timer = setTimeout(
      () => deadline.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')),
      timeoutMs,
    );
    const callerAborted = () => deadline.abort(req.signal?.reason);
    if (req.signal?.aborted) callerAborted();
    else req.signal?.addEventListener('abort', callerAborted, { once: true });
    try {
      answer = await this.#send(
        method,
        url,
        headers,
        req.body === undefined ? undefined : JSON.stringify(req.body),
        deadline.signal,
      );
    } catch (err) {
      throw this.unreachable(url, err);
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', callerAborted);
    }
    const { status, text } = answer;
    if (status < 200 || status > 299) throw this.#error(status, text, url);
    if (status === 204 || text === '') return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new BerthError('unavailable', `Cannot read the answer of ${this.peer} at ${url}: not JSON`, {
        url,
        status,
      });
    }
  }

  async #send(
    method: string,
    url: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal,
  ): Promise<{ status: number; text: string }> {
    if (this.#options.fetch) {
      const response = await this.#options.fetch(url, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal,
      });
      return { status: response.status, text: await response.text() };
    }
    if ((this.#options.transport ?? processTransport) === 'undici') {
      const { request, Agent } = undici ?? (await loadUndici());
      if (this.#options.connection === 'own') this.#ownDispatcher ??= new Agent({ connections: 1 });
      const response = await request(url, {
        method: method as Dispatcher.HttpMethod,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal,
        ...(this.#ownDispatcher ? { dispatcher: this.#ownDispatcher } : {}),
      });
      return { status: response.statusCode, text: await response.body.text() };
    }
    const target = new URL(url);
    // TLS (and its CA bundle) loads only for an https peer.
    const request = target.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
    const options: RequestOptions = {
      method,
      headers:
        body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      signal,
    };
    return new Promise((resolve, reject) => {
      const req = request(target, options, (res) => {
        res.setEncoding('utf8');
        let text = '';
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /**
   * Opens a streaming GET (Server-Sent Events): the Response when the status is 2xx with a body,
   * else the mapped error. No timeout: a stream lives until `signal` aborts.
   */
  async openStream(
    path: string,
    options: { headers?: Readonly<Record<string, string>>; signal?: AbortSignal } = {},
  ): Promise<Response & { body: ReadableStream<Uint8Array> }> {
    return this.#openGet(path, { accept: 'text/event-stream', ...options.headers }, options.signal);
  }

  #openGet(
    path: string,
    headers: Readonly<Record<string, string>>,
    signal: AbortSignal | undefined,
  ): Promise<Response & { body: ReadableStream<Uint8Array> }> {
    return this.#onAnyServer(() => this.#openGetOnce(path, headers, signal), signal);
  }

  async #openGetOnce(
    path: string,
    headers: Readonly<Record<string, string>>,
    signal: AbortSignal | undefined,
  ): Promise<Response & { body: ReadableStream<Uint8Array> }> {
    const url = this.url(path);
    let response: Response;
    try {
      response = await this.#fetch(url, {
        headers: { ...this.authorization(), ...headers },
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      throw this.unreachable(url, err);
    }
    if (!response.ok || !response.body) throw this.#error(response.status, await response.text(), url);
    return response as Response & { body: ReadableStream<Uint8Array> };
  }

  /**
   * Sends a body that is not JSON (an archive: a Buffer, or a stream read once) and decodes the
   * JSON answer, errors mapped as `request`'s. Through fetch, whose body may be a stream.
   */
  sendBody<T>(
    method: string,
    path: string,
    body: Buffer | ReadableStream<Uint8Array>,
    req: SendBodyRequest,
  ): Promise<T> {
    // A stream is read once: it cannot be sent again to another server.
    return this.#onAnyServer(
      () => this.#sendBodyOnce<T>(method, path, body, req),
      undefined,
      Buffer.isBuffer(body),
    );
  }

  async #sendBodyOnce<T>(
    method: string,
    path: string,
    body: Buffer | ReadableStream<Uint8Array>,
    req: SendBodyRequest,
  ): Promise<T> {
    const url = this.url(path, req.query);
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(url, {
        method,
        headers: {
          'content-type': req.contentType,
          ...(req.contentLength !== undefined ? { 'content-length': String(req.contentLength) } : {}),
          ...this.authorization(),
        },
        body,
        duplex: 'half',
        signal: AbortSignal.timeout(req.timeoutMs ?? this.#options.timeoutMs ?? 30_000),
      } as RequestInit);
      text = await response.text();
    } catch (err) {
      throw this.unreachable(url, err);
    }
    if (!response.ok) throw this.#error(response.status, text, url);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }

  /** Opens a GET whose body is bytes (an archive): the Response when 2xx, else the mapped error. */
  async openDownload(
    path: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<Response & { body: ReadableStream<Uint8Array> }> {
    return this.#openGet(path, {}, options.signal);
  }

  /**
   * Follows an SSE stream at `path` until `signal` aborts, yielding each event block once, in order.
   * When the connection drops or the peer cannot be reached (it restarts), it reconnects after
   * `reconnectMs` and resumes after the last block that carried an `id:` (Last-Event-ID); an
   * answer that is an error (401, 404…) is final and thrown.
   */
  async *followStream(
    path: string,
    options: { after?: string; signal?: AbortSignal; reconnectMs?: number } = {},
  ): AsyncGenerator<SseBlock> {
    const signal = options.signal ?? new AbortController().signal;
    let cursor = options.after;
    while (!signal.aborted) {
      let response: Response & { body: ReadableStream<Uint8Array> };
      try {
        response = await this.openStream(path, {
          headers: cursor ? { 'last-event-id': cursor } : {},
          signal,
        });
      } catch (err) {
        if (signal.aborted) return;
        if (!(err instanceof PeerUnreachableError)) throw err;
        await sleep(options.reconnectMs ?? 500, signal);
        continue;
      }
      try {
        for await (const text of sseBlocks(response.body)) {
          // Blocks already read in the same chunk are not handed out after the caller aborted.
          if (signal.aborted) return;
          const block = parseSseBlock(text);
          if (block.id !== undefined) cursor = block.id;
          yield block;
        }
      } catch (err) {
        if (signal.aborted) return;
        // The connection dropped mid-stream (reset, server stopped): reconnect and resume.
        void err;
      }
    }
  }

  /** `unavailable`, naming the peer and the cause (refused, reset, timed out). */
  unreachable(url: string, err: unknown): PeerUnreachableError {
    const hint = this.#options.unreachableHint ? ` ${this.#options.unreachableHint}` : '';
    return new PeerUnreachableError(
      `Cannot reach ${this.peer} at ${this.baseUrl}: ${describeFetchError(err)}${hint}`,
      url,
      err,
    );
  }

  #error(status: number, text: string, url: string): BerthError {
    const err = berthErrorFromHttp(status, text);
    return this.#options.mapError ? this.#options.mapError(err, status, url) : err;
  }
}

/** What `sendBody` sends besides the body. */
export interface SendBodyRequest {
  readonly query?: QueryValues;
  readonly contentType: string;
  readonly contentLength?: number;
  readonly timeoutMs?: number;
}

/**
 * The servers of a `--server A,B` / `BERTH_SERVER=A,B` list (or one URL), trailing slashes off.
 * Validation with a message naming the bad entry is the caller's (server-target.ts): this only
 * refuses an empty list.
 */
export function splitServerUrls(urls: ServerUrls): readonly string[] {
  const list = (typeof urls === 'string' ? urls.split(',') : urls)
    .map((u) => u.trim().replace(/\/+$/, ''))
    .filter((u) => u !== '');
  if (list.length === 0) throw new InvalidArgumentError(`No server URL in "${String(urls)}"`);
  return list;
}

/**
 * No answer at all (refused, reset, timed out): `unavailable`, and distinct from a peer that
 * answered 503, so a stream reader can reconnect after the one and give up on the other.
 */
export class PeerUnreachableError extends BerthError {
  constructor(message: string, url: string, cause: unknown) {
    super('unavailable', message, { url }, { cause });
    this.name = 'PeerUnreachableError';
  }
}

/** fetch's TypeError says only "fetch failed"; the reason (ECONNREFUSED…) is in its cause. */
export function describeFetchError(err: unknown): string {
  if (err instanceof Error) {
    if (err.name === 'TimeoutError' || (err.cause instanceof Error && err.cause.name === 'TimeoutError'))
      return 'timed out';
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}
