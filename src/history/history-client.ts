import { HttpJsonClient, type PeerClientOptions, type ServerUrls } from '../core/index.js';
import { type CreatedToken, historyOperations } from './history-operations.js';
import type {
  ContainerLogs,
  ContainerPage,
  ContainerStatusEvent,
  ListContainersRequest,
} from './history-store.js';
import type { ContainerWithHistory } from './history-types.js';
import type { IngestRecord, IngestResult } from './ingest-records.js';
import type { Subscription, SubscriptionWithDeliveries } from './webhook-subscriptions.js';

/** The token is absent when the server runs with auth none; the hint names the CLI's --server flag. */
export type HistoryClientOptions = PeerClientOptions;

/**
 * The history API over HTTP: what cells post journaled batches with (`ingest` is the
 * CellEventJournal's `post`), and what the CLI reads with.
 */
export class HistoryClient {
  readonly #http: HttpJsonClient;

  constructor(baseUrl: ServerUrls, options: HistoryClientOptions = {}) {
    this.#http = new HttpJsonClient(baseUrl, options);
  }

  /** The server requests go to now (several given: the one that answered last). */
  get baseUrl(): string {
    return this.#http.baseUrl;
  }

  ingest = (records: readonly IngestRecord[]): Promise<IngestResult> =>
    this.#http.call(historyOperations.ingestContainerEvents, { body: { records } });
  listContainers = (req: ListContainersRequest = {}): Promise<ContainerPage> =>
    this.#http.call(historyOperations.listContainers, { query: req });
  getContainer = (id: string): Promise<ContainerWithHistory> =>
    this.#http.call(historyOperations.getContainer, { params: { id } });
  getLogs = (id: string): Promise<ContainerLogs> =>
    this.#http.call(historyOperations.getContainerLogs, { params: { id } });
  recordAction = (id: string, status: string, message?: string): Promise<IngestResult> =>
    this.#http.call(historyOperations.recordContainerAction, {
      params: { id },
      body: { status, ...(message !== undefined ? { message } : {}) },
    });
  subscribe = (url: string, statuses: readonly string[]): Promise<Subscription> =>
    this.#http.call(historyOperations.subscribe, { body: { url, statuses } });
  getSubscription = (id: string): Promise<SubscriptionWithDeliveries> =>
    this.#http.call(historyOperations.getSubscription, { params: { id } });
  createToken = (role: string, name?: string, expiresInS?: number): Promise<CreatedToken> =>
    this.#http.call(historyOperations.createToken, {
      body: {
        role,
        ...(name !== undefined ? { name } : {}),
        ...(expiresInS !== undefined ? { expires_in_s: expiresInS } : {}),
      },
    });

  /**
   * Follows `GET /v1/events` and yields the container status changes, resuming after the last one
   * seen (Last-Event-ID) when the connection drops, until `signal` aborts.
   */
  async *streamContainerEvents(
    options: { after?: string; signal?: AbortSignal } = {},
  ): AsyncGenerator<ContainerStatusEvent & { id: string }> {
    for await (const block of this.#http.followStream('/v1/events', options))
      if (block.event === 'container_status_changed')
        yield JSON.parse(block.data) as ContainerStatusEvent & { id: string };
  }
}
