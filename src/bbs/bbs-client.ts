import { type BerthError, HttpJsonClient } from '../core/index.js';
import type {
  AckRequestsRequest,
  AcquireLeaseRequest,
  ActualLRPFilter,
  ActualLRPGroup,
  ActualLRPRef,
  BbsEvent,
  BbsSnapshot,
  BbsStore,
  CancelTaskRequest,
  CasActualLRPRequest,
  CasTaskRequest,
  CellIdRequest,
  ClaimActualLRPRequest,
  CompleteTaskRequest,
  ConvergenceSnapshot,
  CrashActualLRPRequest,
  DesiredLRPDefinition,
  DesiredLRPFilter,
  EvacuateRunningActualLRPRequest,
  FailActualLRPRequest,
  FailTaskRequest,
  HeartbeatCellRequest,
  Lease,
  LeaseResult,
  OwnerOfRequest,
  OwnerOfResult,
  ProcessGuidRequest,
  PruneEventsRequest,
  ReadEventsRequest,
  RecordCounts,
  ReleaseLeaseRequest,
  RemoveActualLRPRequest,
  RemoveDesiredLRPRequest,
  RemoveEvacuatingActualLRPRequest,
  RetireActualLRPResult,
  StartActualLRPRequest,
  StartRequestDelivery,
  StartTaskRequest,
  StopRequestDelivery,
  TakeRequestsRequest,
  TakeStopRequestsRequest,
  TaskFilter,
  TaskGuidRequest,
  TaskStartRequestDelivery,
  UpdateDesiredLRPRequest,
  UpsertDomainRequest,
} from './bbs-store.js';
import type { ActualLRP, CellPresence, DesiredLRP, Domain, Task, TaskDefinition } from './bbs-types.js';
import { CasConflictError } from './cas-conflict-error.js';
import { type BbsOperationName, bbsOperationPaths } from './http/bbs-operations.js';

export interface BbsClientOptions {
  /** Per-request timeout; a timeout is an `unavailable` error (retryable). */
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
  /** Bearer token for a server with auth on (the CLI's: src/cli/server-target.ts). */
  readonly token?: string;
}

/**
 * The BBS over HTTP, implementing the same BbsStore as the SQL store: a component written against
 * BbsStore runs in-process or against a remote `berth server` unchanged. Errors come back as the
 * same BerthError codes (CasConflictError with `current` for a lost CAS).
 */
export class BbsClient implements BbsStore {
  readonly baseUrl: string;
  readonly #http: HttpJsonClient;

  constructor(baseUrl: string, options: BbsClientOptions = {}) {
    this.#http = new HttpJsonClient(baseUrl, {
      peer: 'the BBS',
      timeoutMs: options.timeoutMs ?? 30_000,
      token: options.token,
      mapError: withCasCurrent,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    this.baseUrl = this.#http.baseUrl;
  }

  desireLRP = (req: DesiredLRPDefinition): Promise<DesiredLRP> => this.call('desireLRP', req);
  getDesiredLRP = (req: ProcessGuidRequest): Promise<DesiredLRP> => this.call('getDesiredLRP', req);
  listDesiredLRPs = (req: DesiredLRPFilter = {}): Promise<DesiredLRP[]> => this.call('listDesiredLRPs', req);
  updateDesiredLRP = (req: UpdateDesiredLRPRequest): Promise<DesiredLRP> =>
    this.call('updateDesiredLRP', req);
  removeDesiredLRP = (req: RemoveDesiredLRPRequest): Promise<void> => this.call('removeDesiredLRP', req);

  listActualLRPs = (req: ActualLRPFilter = {}): Promise<ActualLRP[]> => this.call('listActualLRPs', req);
  getActualLRP = (req: ActualLRPRef): Promise<ActualLRPGroup> => this.call('getActualLRP', req);
  createActualLRP = (req: ActualLRPRef): Promise<ActualLRP> => this.call('createActualLRP', req);
  claimActualLRP = (req: ClaimActualLRPRequest): Promise<ActualLRP> => this.call('claimActualLRP', req);
  startActualLRP = (req: StartActualLRPRequest): Promise<ActualLRP> => this.call('startActualLRP', req);
  crashActualLRP = (req: CrashActualLRPRequest): Promise<ActualLRP> => this.call('crashActualLRP', req);
  failActualLRP = (req: FailActualLRPRequest): Promise<ActualLRP> => this.call('failActualLRP', req);
  unclaimActualLRP = (req: CasActualLRPRequest): Promise<ActualLRP> => this.call('unclaimActualLRP', req);
  removeActualLRP = (req: RemoveActualLRPRequest): Promise<void> => this.call('removeActualLRP', req);
  retireActualLRP = (req: CasActualLRPRequest): Promise<RetireActualLRPResult> =>
    this.call('retireActualLRP', req);
  evacuateRunningActualLRP = (req: EvacuateRunningActualLRPRequest): Promise<ActualLRPGroup> =>
    this.call('evacuateRunningActualLRP', req);
  removeEvacuatingActualLRP = (req: RemoveEvacuatingActualLRPRequest): Promise<void> =>
    this.call('removeEvacuatingActualLRP', req);

  takeStartRequests = (req: TakeRequestsRequest): Promise<StartRequestDelivery[]> =>
    this.call('takeStartRequests', req);
  ackStartRequests = (req: AckRequestsRequest): Promise<void> => this.call('ackStartRequests', req);
  takeTaskStartRequests = (req: TakeRequestsRequest): Promise<TaskStartRequestDelivery[]> =>
    this.call('takeTaskStartRequests', req);
  ackTaskStartRequests = (req: AckRequestsRequest): Promise<void> => this.call('ackTaskStartRequests', req);
  takeStopRequests = (req: TakeStopRequestsRequest): Promise<StopRequestDelivery[]> =>
    this.call('takeStopRequests', req);
  ackStopRequests = (req: AckRequestsRequest): Promise<void> => this.call('ackStopRequests', req);

  desireTask = (req: TaskDefinition): Promise<Task> => this.call('desireTask', req);
  getTask = (req: TaskGuidRequest): Promise<Task> => this.call('getTask', req);
  listTasks = (req: TaskFilter = {}): Promise<Task[]> => this.call('listTasks', req);
  startTask = (req: StartTaskRequest): Promise<Task> => this.call('startTask', req);
  completeTask = (req: CompleteTaskRequest): Promise<Task> => this.call('completeTask', req);
  failTask = (req: FailTaskRequest): Promise<Task> => this.call('failTask', req);
  cancelTask = (req: CancelTaskRequest): Promise<Task> => this.call('cancelTask', req);
  resolvingTask = (req: CasTaskRequest): Promise<Task> => this.call('resolvingTask', req);
  demoteResolvingTask = (req: CasTaskRequest): Promise<Task> => this.call('demoteResolvingTask', req);
  deleteTask = (req: CasTaskRequest): Promise<void> => this.call('deleteTask', req);

  upsertDomain = (req: UpsertDomainRequest): Promise<Domain> => this.call('upsertDomain', req);
  listDomains = (): Promise<Domain[]> => this.call('listDomains', {});
  ownerOf = (req: OwnerOfRequest): Promise<OwnerOfResult> => this.call('ownerOf', req);
  heartbeatCell = (req: HeartbeatCellRequest): Promise<CellPresence> => this.call('heartbeatCell', req);
  listCells = (): Promise<CellPresence[]> => this.call('listCells', {});
  removeCell = (req: CellIdRequest): Promise<void> => this.call('removeCell', req);

  acquireLease = (req: AcquireLeaseRequest): Promise<LeaseResult> => this.call('acquireLease', req);
  releaseLease = (req: ReleaseLeaseRequest): Promise<void> => this.call('releaseLease', req);
  listLeases = (): Promise<Lease[]> => this.call('listLeases', {});

  readSnapshot = (): Promise<BbsSnapshot> => this.call('readSnapshot', {});
  readConvergenceSnapshot = (): Promise<ConvergenceSnapshot> => this.call('readConvergenceSnapshot', {});
  readEvents = (req: ReadEventsRequest): Promise<BbsEvent[]> => this.call('readEvents', req);
  countRecords = (): Promise<RecordCounts> => this.call('countRecords', {});
  pruneEvents = (req: PruneEventsRequest): Promise<number> => this.call('pruneEvents', req);

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

  private call<T>(operation: BbsOperationName, body: unknown): Promise<T> {
    return this.#http.request<T>('POST', bbsOperationPaths[operation], { body });
  }
}

/** A lost CAS comes back as the CasConflictError it was, with the record's `current` state. */
function withCasCurrent(err: BerthError): BerthError {
  if (err.code !== 'cas_conflict') return err;
  const details = err.details;
  const expected = (details.expected ?? null) as ConstructorParameters<typeof CasConflictError>[2];
  return new CasConflictError(String(details.kind), String(details.id), expected, details.current ?? null);
}
