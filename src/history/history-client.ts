import { BerthError, type ErrorCode, httpStatusByCode } from '../core/index.js';
import type {
  ContainerLogs,
  ContainerPage,
  ContainerStatusEvent,
  ListContainersRequest,
} from './history-store.js';
import type { ContainerWithHistory } from './history-types.js';
import type { IngestRecord, IngestResult } from './ingest-records.js';
import type { Subscription, SubscriptionWithDeliveries } from './webhook-subscriptions.js';

export interface HistoryClientOptions {
  /** Bearer token (see readCliToken in src/cli); absent when the server runs with auth none. */
  readonly token?: string;
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
}

/**
 * The history API over HTTP: what cells post journaled batches with (`ingest` is the
 * CellEventJournal's `post`), and what the CLI reads with.
 */
export class HistoryClient {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(baseUrl: string, options: HistoryClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#fetch = options.fetch ?? fetch;
  }

  ingest = (records: readonly IngestRecord[]): Promise<IngestResult> =>
    this.request('POST', '/v1/containers/events', { records });

  listContainers(req: ListContainersRequest = {}): Promise<ContainerPage> {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(req)) if (v !== undefined) query.set(k, String(v));
    const qs = query.toString();
    return this.request('GET', `/v1/containers${qs ? `?${qs}` : ''}`);
  }

  getContainer = (id: string): Promise<ContainerWithHistory> =>
    this.request('GET', `/v1/containers/${encodeURIComponent(id)}`);
  getLogs = (id: string): Promise<ContainerLogs> =>
    this.request('GET', `/v1/containers/${encodeURIComponent(id)}/logs`);
  recordAction = (id: string, status: string, message?: string): Promise<IngestResult> =>
    this.request('POST', `/v1/containers/${encodeURIComponent(id)}/actions`, {
      status,
      ...(message !== undefined ? { message } : {}),
    });
  subscribe = (url: string, statuses: readonly string[]): Promise<Subscription> =>
    this.request('POST', '/v1/subscriptions', { url, statuses });
  getSubscription = (id: string): Promise<SubscriptionWithDeliveries> =>
    this.request('GET', `/v1/subscriptions/${encodeURIComponent(id)}`);
  createToken = (
    role: string,
    name?: string,
  ): Promise<{ id: string; name: string; role: string; token: string }> =>
    this.request('POST', '/v1/tokens', { role, ...(name !== undefined ? { name } : {}) });

  /**
   * Follows `GET /v1/events` and yields the container status changes, resuming after the last one
   * seen (Last-Event-ID) when the connection drops, until `signal` aborts.
   */
  async *streamContainerEvents(
    options: { after?: string; signal?: AbortSignal } = {},
  ): AsyncGenerator<ContainerStatusEvent & { id: string }> {
    let cursor = options.after;
    while (!options.signal?.aborted) {
      let response: Response;
      try {
        response = await this.#fetch(`${this.baseUrl}/v1/events`, {
          headers: {
            accept: 'text/event-stream',
            ...this.#auth(),
            ...(cursor ? { 'last-event-id': cursor } : {}),
          },
          ...(options.signal ? { signal: options.signal } : {}),
        });
      } catch {
        if (options.signal?.aborted) return;
        await new Promise((resolve) => setTimeout(resolve, 500));
        continue;
      }
      if (!response.ok || !response.body) throw await errorFrom(response);
      try {
        for await (const block of sseBlocks(response.body)) {
          const id = /^id: (.*)$/m.exec(block)?.[1];
          if (id) cursor = id;
          if (!/^event: container_status_changed$/m.test(block)) continue;
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('\n');
          yield JSON.parse(data) as ContainerStatusEvent & { id: string };
        }
      } catch {
        if (options.signal?.aborted) return;
      }
    }
  }

  #auth(): Record<string, string> {
    return this.#token ? { authorization: `Bearer ${this.#token}` } : {};
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await this.#fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...this.#auth() },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw new BerthError(
        'unavailable',
        `Cannot reach the berth server at ${this.baseUrl}: ${String(err)}`,
        {
          url: this.baseUrl,
        },
      );
    }
    if (response.status === 204) return undefined as T;
    if (!response.ok) throw await errorFrom(response);
    return (await response.json()) as T;
  }
}

async function errorFrom(response: Response): Promise<BerthError> {
  const text = await response.text();
  let body: { code?: string; message?: string; details?: Record<string, unknown> } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    body = { message: text };
  }
  const code = (body.code && body.code in httpStatusByCode ? body.code : 'internal') as ErrorCode;
  return new BerthError(code, body.message ?? `HTTP ${response.status}`, body.details ?? {});
}

async function* sseBlocks(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      yield buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
    }
  }
}
