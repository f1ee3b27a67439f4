import {
  type BerthError,
  ConcurrencyGate,
  HttpJsonClient,
  type PeerClientOptions,
  type ServerUrls,
} from '../core/index.js';
import type { BbsStore } from './bbs-store.js';
import type { BbsEvent } from './bbs-store-log.js';
import { CasConflictError } from './cas-conflict-error.js';
import { type BbsOperationName, bbsOperationPaths } from './http/bbs-operations.js';

/** The per-request timeout defaults to 30 s; a timeout is an `unavailable` error (retryable). */
export interface BbsClientOptions extends PeerClientOptions {
  /** Requests in flight at once (default 16); the rest wait their turn (`ConcurrencyGate`). */
  readonly maxInFlight?: number;
}

/**
 * The BBS over HTTP, implementing the same BbsStore as the SQL store: a component written against
 * BbsStore runs in-process or against a remote `berth server` unchanged. Errors come back as the
 * same BerthError codes (CasConflictError with `current` for a lost CAS).
 */
export class BbsClient implements BbsStore {
  readonly #http: HttpJsonClient;
  /**
   * Heartbeats only, over one connection of their own, kept open between beats (the server's
   * keep-alive is 72 s; a cell beats at least every TTL/3). A busy server accepts new connections
   * slowly: libuv takes one per turn of its event loop, and a turn under load lasts up to a
   * second. A burst of a cell's claims and starts opens new connections by the dozen, and a
   * heartbeat that needed one of them waited 20–30 s in the accept queue (measured with 100
   * simulated cells): its presence lapsed, and the converger handed the cell's instances to
   * others. A connection already open is read on the server's next turn. (Diego's reps, likewise,
   * keep their presence through Locket, apart from their BBS client.)
   */
  readonly #presence: HttpJsonClient;
  readonly #gate: ConcurrencyGate;

  constructor(baseUrl: ServerUrls, options: BbsClientOptions = {}) {
    const { maxInFlight = 16, ...peer } = options;
    this.#http = new HttpJsonClient(baseUrl, { ...peer, peer: 'the BBS', mapError: withCasCurrent });
    this.#presence = new HttpJsonClient(baseUrl, {
      ...peer,
      connection: 'own',
      peer: 'the BBS',
      mapError: withCasCurrent,
    });
    this.#gate = new ConcurrencyGate(maxInFlight);
  }

  /** The server requests go to now (several given: the one that answered last). */
  get baseUrl(): string {
    return this.#http.baseUrl;
  }

  desireLRP = this.#operation('desireLRP');
  getDesiredLRP = this.#operation('getDesiredLRP');
  listDesiredLRPs = this.#operation('listDesiredLRPs');
  updateDesiredLRP = this.#operation('updateDesiredLRP');
  removeDesiredLRP = this.#operation('removeDesiredLRP');
  listActualLRPs = this.#operation('listActualLRPs');
  getActualLRP = this.#operation('getActualLRP');
  createActualLRP = this.#operation('createActualLRP');
  claimActualLRP = this.#operation('claimActualLRP');
  claimActualLRPs = this.#operation('claimActualLRPs');
  startActualLRP = this.#operation('startActualLRP');
  startActualLRPs = this.#operation('startActualLRPs');
  crashActualLRP = this.#operation('crashActualLRP');
  failActualLRP = this.#operation('failActualLRP');
  unclaimActualLRP = this.#operation('unclaimActualLRP');
  unclaimActualLRPs = this.#operation('unclaimActualLRPs');
  removeActualLRP = this.#operation('removeActualLRP');
  retireActualLRP = this.#operation('retireActualLRP');
  evacuateRunningActualLRP = this.#operation('evacuateRunningActualLRP');
  removeEvacuatingActualLRP = this.#operation('removeEvacuatingActualLRP');
  takeStartRequests = this.#operation('takeStartRequests');
  ackStartRequests = this.#operation('ackStartRequests');
  takeTaskStartRequests = this.#operation('takeTaskStartRequests');
  ackTaskStartRequests = this.#operation('ackTaskStartRequests');
  takeStopRequests = this.#operation('takeStopRequests');
  cellPass = this.#operation('cellPass');
  ackStopRequests = this.#operation('ackStopRequests');
  desireTask = this.#operation('desireTask');
  getTask = this.#operation('getTask');
  listTasks = this.#operation('listTasks');
  startTask = this.#operation('startTask');
  completeTask = this.#operation('completeTask');
  failTask = this.#operation('failTask');
  cancelTask = this.#operation('cancelTask');
  resolvingTask = this.#operation('resolvingTask');
  demoteResolvingTask = this.#operation('demoteResolvingTask');
  deleteTask = this.#operation('deleteTask');
  upsertDomain = this.#operation('upsertDomain');
  listDomains = this.#operation('listDomains');
  listVolumePins = this.#operation('listVolumePins');
  releaseVolumePins = this.#operation('releaseVolumePins');
  ownerOf = this.#operation('ownerOf');
  heartbeatCell = this.#operation('heartbeatCell');
  listCells = this.#operation('listCells');
  removeCell = this.#operation('removeCell');
  expireCells = this.#operation('expireCells');
  acquireLease = this.#operation('acquireLease');
  releaseLease = this.#operation('releaseLease');
  listLeases = this.#operation('listLeases');
  readSnapshot = this.#operation('readSnapshot');
  readConvergenceSnapshot = this.#operation('readConvergenceSnapshot');
  readEvents = this.#operation('readEvents');
  headEventId = this.#operation('headEventId');
  countRecords = this.#operation('countRecords');
  pruneEvents = this.#operation('pruneEvents');

  /** Nothing to release: fetch pools its own connections. */
  async close(): Promise<void> {}

  /**
   * Follows `GET /v1/events` (SSE) from `after` until `signal` aborts, yielding each event once in
   * order. The stream is resumed from the last event seen when the connection drops.
   */
  async *streamEvents(options: { after?: string; signal?: AbortSignal } = {}): AsyncGenerator<BbsEvent> {
    for await (const block of this.#http.followStream('/v1/events', options))
      if (block.data) yield JSON.parse(block.data) as BbsEvent;
  }

  /**
   * One store operation as a POST of its request to its internal route. The op table
   * (http/bbs-operations.ts) is checked against BbsStore at compile time, so the name fixes both the
   * route and the signature; operations without a request send `{}`.
   */
  #operation<K extends BbsOperationName>(operation: K): BbsStore[K] {
    const path = bbsOperationPaths[operation];
    // Chosen per call: the operations are fields, made before the constructor sets the clients.
    const send = (req: unknown) =>
      (ungated.has(operation) ? this.#presence : this.#http).request('POST', path, { body: req });
    // A heartbeat never waits behind the cell's own bulk work: queued there while a busy server
    // answered a burst of claims and starts slowly, it missed the presence TTL and the cell was
    // declared lost with every instance on it (the scale harness, 100 cells).
    const call = ungated.has(operation)
      ? (req: unknown = {}) => send(req)
      : (req: unknown = {}) => this.#gate.run(() => send(req));
    return call as BbsStore[K];
  }
}

/** Operations that skip the request gate: one small request per TTL/3, whose lateness costs a cell. */
const ungated: ReadonlySet<BbsOperationName> = new Set(['heartbeatCell']);

/** A lost CAS comes back as the CasConflictError it was, with the record's `current` state. */
function withCasCurrent(err: BerthError): BerthError {
  if (err.code !== 'cas_conflict') return err;
  const details = err.details;
  const expected = (details.expected ?? null) as ConstructorParameters<typeof CasConflictError>[2];
  return new CasConflictError(String(details.kind), String(details.id), expected, details.current ?? null);
}
