import type { ErrorCode } from '../core/index.js';
import type {
  AcquireLeaseRequest,
  BbsEvent,
  BbsSnapshot,
  ConvergenceSnapshot,
  Lease,
  LeaseResult,
  PruneEventsRequest,
  ReadEventsRequest,
  RecordCounts,
  ReleaseLeaseRequest,
} from './bbs-store-log.js';
import type {
  ActualLRP,
  ActualLRPInstanceKey,
  ActualLRPNetInfo,
  ActualLRPState,
  CellPresence,
  DesiredLRP,
  DesiredLRPUpdate,
  Domain,
  LRPStartRequest,
  ModificationTag,
  Task,
  TaskDefinition,
  TaskState,
} from './bbs-types.js';
import type { CellPacing } from './cell-pacing.js';
import type { RoutesInput } from './http-routes.js';

/**
 * The one interface of the BBS. The SQL store implements it over SQLite and PostgreSQL; the HTTP
 * client implements it over the API, so a component takes a `BbsStore` and runs in-process (the
 * embedded `berth up`) or against a remote `berth server` alike.
 *
 * Every method takes one request object whose fields are the JSON body of its HTTP route. Every
 * mutation is one transaction and a compare-and-set on the record's modification tag: a stale
 * `expected` throws CasConflictError (with the current record), a missing record NotFoundError, a
 * move the transition table forbids IllegalTransitionError.
 */
export interface BbsStore {
  // DesiredLRPs: what consumers want. Desiring, scaling and removing also write the ActualLRPs,
  // start requests and stop requests the change implies, in the same transaction.
  desireLRP(req: DesiredLRPDefinition): Promise<DesiredLRP>;
  getDesiredLRP(req: ProcessGuidRequest): Promise<DesiredLRP>;
  listDesiredLRPs(req?: DesiredLRPFilter): Promise<DesiredLRP[]>;
  updateDesiredLRP(req: UpdateDesiredLRPRequest): Promise<DesiredLRP>;
  removeDesiredLRP(req: RemoveDesiredLRPRequest): Promise<void>;

  // ActualLRPs: action-oriented, as Diego's BBS (the rep, converger and auctioneer call these).
  listActualLRPs(req?: ActualLRPFilter): Promise<ActualLRP[]>;
  getActualLRP(req: ActualLRPRef): Promise<ActualLRPGroup>;
  /** Creates the UNCLAIMED instance of a missing index of a DesiredLRP and requests its start. */
  createActualLRP(req: ActualLRPRef): Promise<ActualLRP>;
  claimActualLRP(req: ClaimActualLRPRequest): Promise<ActualLRP>;
  /**
   * Claims many UNCLAIMED instances for one cell in one transaction (the instances one auction
   * handed it): each is claimed while UNCLAIMED, whatever its tag, as Diego's claim checks state,
   * not a tag; one its claimant already holds is claimed again; any other comes back refused. The
   * answer carries the DesiredLRPs the claimed instances run.
   */
  claimActualLRPs(req: ClaimActualLRPsRequest): Promise<ClaimActualLRPsResult>;
  /** RUNNING with net info; `expected: null` creates it (a cell runs an instance the BBS lost). */
  startActualLRP(req: StartActualLRPRequest): Promise<ActualLRP>;
  /**
   * Many starts of claimed or running instances in one transaction (what a cell's starts piled up
   * while its last request was in flight). Each is the start above with its own tag and answer: one
   * that loses its CAS or breaks a rule is that item's error, and the others still land.
   */
  startActualLRPs(req: StartActualLRPsRequest): Promise<StartActualLRPsResult>;
  /** The rep computed the crash policy; the store records its outcome (UNCLAIMED also requests a start). */
  crashActualLRP(req: CrashActualLRPRequest): Promise<ActualLRP>;
  /** The auctioneer could not place it: stays UNCLAIMED with the reason. */
  failActualLRP(req: FailActualLRPRequest): Promise<ActualLRP>;
  /** Back to UNCLAIMED (from CLAIMED, RUNNING, CRASHED, or UNCLAIMED to re-emit) and requests a start. */
  unclaimActualLRP(req: CasActualLRPRequest): Promise<ActualLRP>;
  /**
   * Many unclaims in one transaction (the converger giving back a lost cell's instances): each is
   * the unclaim above with its own tag and answer, as startActualLRPs. Their start requests reach
   * the auctioneer together, so one auction places them all.
   */
  unclaimActualLRPs(req: UnclaimActualLRPsRequest): Promise<UnclaimActualLRPsResult>;
  /** Compare-and-delete; with `instance_key`, only when that cell owns it. */
  removeActualLRP(req: RemoveActualLRPRequest): Promise<void>;
  /** Stops one instance: UNCLAIMED/CRASHED are deleted, CLAIMED/RUNNING get a stop request for their cell. */
  retireActualLRP(req: CasActualLRPRequest): Promise<RetireActualLRPResult>;
  /** Moves a RUNNING instance beside itself under `/evacuating`; the instance goes UNCLAIMED with a start. */
  evacuateRunningActualLRP(req: EvacuateRunningActualLRPRequest): Promise<ActualLRPGroup>;
  removeEvacuatingActualLRP(req: RemoveEvacuatingActualLRPRequest): Promise<void>;

  // Durable outboxes: start requests for the auctioneer, stop requests for the cells. A taken
  // request is hidden for `visibility_ms` and comes back unless acknowledged (at-least-once).
  takeStartRequests(req: TakeRequestsRequest): Promise<StartRequestDelivery[]>;
  ackStartRequests(req: AckRequestsRequest): Promise<void>;
  takeTaskStartRequests(req: TakeRequestsRequest): Promise<TaskStartRequestDelivery[]>;
  ackTaskStartRequests(req: AckRequestsRequest): Promise<void>;
  takeStopRequests(req: TakeStopRequestsRequest): Promise<StopRequestDelivery[]>;
  ackStopRequests(req: AckRequestsRequest): Promise<void>;
  /**
   * A rep's safety-net pass in one request: takes the cell's stop requests as `takeStopRequests`
   * does, then lists its ActualLRPs and its tasks, in that order (so the lists are at least as
   * new as every stop taken). Three requests were most of an idle cluster's load.
   */
  cellPass(req: CellPassRequest): Promise<CellPass>;

  // Tasks: at most once.
  desireTask(req: TaskDefinition): Promise<Task>;
  getTask(req: TaskGuidRequest): Promise<Task>;
  listTasks(req?: TaskFilter): Promise<Task[]>;
  startTask(req: StartTaskRequest): Promise<Task>;
  completeTask(req: CompleteTaskRequest): Promise<Task>;
  failTask(req: FailTaskRequest): Promise<Task>;
  /** COMPLETED, failed, "task was cancelled"; a RUNNING task also gets a stop request for its cell. */
  cancelTask(req: CancelTaskRequest): Promise<Task>;
  resolvingTask(req: CasTaskRequest): Promise<Task>;
  demoteResolvingTask(req: CasTaskRequest): Promise<Task>;
  deleteTask(req: CasTaskRequest): Promise<void>;

  // Domains and cells: freshness and presence with a TTL.
  upsertDomain(req: UpsertDomainRequest): Promise<Domain>;
  /** Only fresh domains, as Diego answers. */
  listDomains(): Promise<Domain[]>;
  /** The system that owns a domain, or the domain of a DesiredLRP or task (one read). */
  ownerOf(req: OwnerOfRequest): Promise<OwnerOfResult>;
  /**
   * Begins or extends a cell's presence. The answer grants the TTL the presence got (the one asked
   * for, or longer when the cluster's cells would otherwise heartbeat faster than the server's
   * limit) and the shortest interval for the cell's safety-net pass (src/bbs/cell-pacing.ts).
   */
  heartbeatCell(req: HeartbeatCellRequest): Promise<HeartbeatCellResponse>;
  /** Only live cells. */
  listCells(): Promise<CellPresence[]>;
  removeCell(req: CellIdRequest): Promise<void>;
  /**
   * Deletes the presences that have expired, each with a `cell_disappeared` event, and returns
   * their cell ids (an expiry writes nothing by itself: the converger's presence watch calls this).
   */
  expireCells(): Promise<string[]>;

  // Named volumes: the cells that hold their data, pinning instances there (sql/volume-pins.ts).
  listVolumePins(req?: VolumePinFilter): Promise<VolumePin[]>;
  /** An operator's choice: the released instances may start elsewhere, with fresh volumes. */
  releaseVolumePins(req: ReleaseVolumePinsRequest): Promise<{ readonly released: number }>;

  // Leases for singletons (converger, auctioneer), fenced by a token that grows on every handover.
  acquireLease(req: AcquireLeaseRequest): Promise<LeaseResult>;
  releaseLease(req: ReleaseLeaseRequest): Promise<void>;
  listLeases(): Promise<Lease[]>;

  // Reads for the converger, SSE and metrics.
  /** All DesiredLRPs, ActualLRPs, fresh domains and live cells from one consistent snapshot. */
  readSnapshot(): Promise<BbsSnapshot>;
  /**
   * The converger's read: every DesiredLRP and every ActualLRP (only the fields convergence plans
   * from), fresh domains and live cells, from one consistent snapshot.
   */
  readConvergenceSnapshot(): Promise<ConvergenceSnapshot>;
  readEvents(req: ReadEventsRequest): Promise<BbsEvent[]>;
  /**
   * The id of the newest event kept ('' when none): `readEvents({ after })` from it reads only what
   * is written from now on, without paging through the whole log to find its end.
   */
  headEventId(): Promise<string>;
  countRecords(): Promise<RecordCounts>;
  /** Deletes events older than `before` (ISO-8601); returns how many. */
  pruneEvents(req: PruneEventsRequest): Promise<number>;

  close(): Promise<void>;
}

/** What a consumer gives to desire an LRP; the store adds `created_at` and the tag. */
export type DesiredLRPDefinition = Omit<DesiredLRP, 'created_at' | 'modification_tag' | 'routes'> & {
  /** Stored as the map; the plain array of HTTP routes is accepted too (http-routes.ts). */
  readonly routes: RoutesInput;
};

export interface ProcessGuidRequest {
  readonly process_guid: string;
}
/**
 * Keyset paging of a list (the public routes' `limit` + `cursor`): at most `limit` records, in key
 * order, strictly after the key `after`. Absent: the whole list (internal callers need the full set).
 */
export interface ListPage<K> {
  readonly limit?: number;
  readonly after?: K;
}
export interface DesiredLRPFilter extends ListPage<string> {
  readonly domain?: string;
}
export interface UpdateDesiredLRPRequest {
  readonly process_guid: string;
  /** Absent: update whatever is current (still one CAS inside the transaction). */
  readonly expected?: ModificationTag;
  readonly update: DesiredLRPUpdate;
}
export interface RemoveDesiredLRPRequest {
  readonly process_guid: string;
  readonly expected?: ModificationTag;
}

export interface ActualLRPRef {
  readonly process_guid: string;
  readonly index: number;
}
/** An ActualLRP's key, the order `listActualLRPs` returns them in. */
export interface ActualLRPPageKey {
  readonly process_guid: string;
  readonly index: number;
  readonly evacuating: boolean;
}
export interface ActualLRPFilter extends ListPage<ActualLRPPageKey> {
  readonly process_guid?: string;
  readonly domain?: string;
  readonly cell_id?: string;
}
/** Diego's ActualLRPGroup: the instance copy and the evacuating copy of one index. */
export interface ActualLRPGroup {
  readonly instance: ActualLRP | null;
  readonly evacuating: ActualLRP | null;
}
export interface CasActualLRPRequest extends ActualLRPRef {
  readonly expected: ModificationTag;
}
export interface ClaimActualLRPRequest extends CasActualLRPRequest {
  readonly instance_key: ActualLRPInstanceKey;
}
/** One instance of a batch claim, with the instance guid its container runs under. */
export interface InstanceClaim extends ActualLRPRef {
  readonly instance_guid: string;
}
export interface ClaimActualLRPsRequest {
  /** The cell that claims them all. */
  readonly cell_id: string;
  readonly claims: readonly InstanceClaim[];
}
/** A claim not taken: the record is gone, evacuating only, or not UNCLAIMED (`current` says how). */
export interface ClaimRefusal extends ActualLRPRef {
  readonly reason: string;
  readonly current: ActualLRP | null;
}
export interface ClaimActualLRPsResult {
  /** The claimed records as stored, in the order claimed. */
  readonly claimed: readonly ActualLRP[];
  readonly refused: readonly ClaimRefusal[];
  /**
   * The DesiredLRP of each process guid claimed, read in the claim's transaction: what the claimed
   * instances run, so the cell needs no read of its own. A process guid missing here has no
   * DesiredLRP any more (its instances are claimed all the same, for the cell to give back).
   */
  readonly desired_lrps: readonly DesiredLRP[];
}
export interface StartActualLRPRequest extends ActualLRPRef {
  /** null: the record must not exist and is created RUNNING (needs `domain`). */
  readonly expected: ModificationTag | null;
  readonly domain?: string;
  readonly instance_key: ActualLRPInstanceKey;
  readonly net_info: ActualLRPNetInfo;
}
/** A start of a batch: always a CAS on the record's tag (creation stays a single start). */
export interface BatchedStartRequest extends StartActualLRPRequest {
  readonly expected: ModificationTag;
}
export interface StartActualLRPsRequest {
  readonly starts: readonly BatchedStartRequest[];
}
/** One start's answer: the record as stored, or why not (a BerthError's code and message). */
export type StartResult =
  | { readonly actual_lrp: ActualLRP }
  | { readonly error: { readonly code: ErrorCode; readonly message: string; readonly current?: unknown } };
export interface StartActualLRPsResult {
  /** In the order of the request's starts. */
  readonly results: readonly StartResult[];
}
export interface UnclaimActualLRPsRequest {
  readonly unclaims: readonly CasActualLRPRequest[];
}
export interface UnclaimActualLRPsResult {
  /** In the order of the request's unclaims, each shaped as a batched start's answer. */
  readonly results: readonly StartResult[];
}
export interface CrashActualLRPRequest extends ActualLRPRef {
  /** null: the record must not exist and is created in `state` (the rep saw a crash the BBS lost). */
  readonly expected: ModificationTag | null;
  readonly domain?: string;
  readonly instance_key: ActualLRPInstanceKey;
  readonly state: Extract<ActualLRPState, 'UNCLAIMED' | 'CRASHED'>;
  readonly crash_count: number;
  readonly last_crashed_at: string;
  readonly crash_reason: string;
}
export interface FailActualLRPRequest extends CasActualLRPRequest {
  readonly placement_error: string;
  /**
   * The claimant giving a CLAIMED instance back because it cannot run it here (its image cannot
   * be pulled): UNCLAIMED with the error and no start request, so the next try waits for the
   * converger's unclaimed-start timeout instead of looping through the auction at once.
   */
  readonly instance_key?: ActualLRPInstanceKey;
}
export interface RemoveActualLRPRequest extends CasActualLRPRequest {
  readonly instance_key?: ActualLRPInstanceKey;
}
export interface RetireActualLRPResult {
  readonly removed: boolean;
  readonly stop_request: LRPStopRequest | null;
}
export interface EvacuateRunningActualLRPRequest extends CasActualLRPRequest {
  readonly instance_key: ActualLRPInstanceKey;
  readonly net_info: ActualLRPNetInfo;
}
export interface RemoveEvacuatingActualLRPRequest extends CasActualLRPRequest {
  readonly instance_key: ActualLRPInstanceKey;
}

/** A stop the BBS asks a cell to carry out (Diego sends these straight to the rep). */
export interface LRPStopRequest {
  readonly process_guid: string;
  readonly index: number;
  readonly instance_guid: string;
  readonly cell_id: string;
}
export interface TakeRequestsRequest {
  readonly limit: number;
  readonly visibility_ms: number;
}
export interface TakeStopRequestsRequest extends TakeRequestsRequest {
  readonly cell_id?: string;
}
export interface CellPassRequest {
  readonly cell_id: string;
  /** Stop requests taken at most. */
  readonly stop_limit: number;
  /** How long the taken stop requests stay hidden unless acknowledged. */
  readonly visibility_ms: number;
  /**
   * The `digest` of the lists the rep holds from its last pass: when no stop was taken and the
   * cell's records still have that digest, the answer is `unchanged` and carries no lists.
   */
  readonly known_digest?: string;
}
export interface CellPass {
  readonly stops: readonly StopRequestDelivery[];
  /**
   * Every ActualLRP of the cell, evacuating copies included (`listActualLRPs({cell_id})`); empty
   * when `unchanged`.
   */
  readonly actual_lrps: readonly ActualLRP[];
  /** Every task of the cell (`listTasks({cell_id})`); empty when `unchanged`. */
  readonly tasks: readonly Task[];
  /** The digest of the cell's records (`cellPassDigest`), to send back as `known_digest`. */
  readonly digest: string;
  /** The records have the `known_digest` the rep sent: its lists are still the cell's. */
  readonly unchanged?: boolean;
}
export interface AckRequestsRequest {
  readonly ids: readonly number[];
}
/** Start requests of one DesiredLRP grouped into one LRPStartRequest; ack all `ids` once placed. */
export interface StartRequestDelivery {
  readonly ids: readonly number[];
  readonly request: LRPStartRequest;
}
export interface TaskStartRequest {
  readonly task_guid: string;
  readonly domain: string;
  readonly memory_mb: number;
  readonly disk_mb: number;
  readonly placement_tags: readonly string[];
}
export interface TaskStartRequestDelivery {
  readonly id: number;
  readonly request: TaskStartRequest;
}
export interface StopRequestDelivery {
  readonly id: number;
  readonly kind: 'lrp' | 'task';
  /** For kind "task", process_guid is the task_guid and index is 0. */
  readonly request: LRPStopRequest;
}

export interface TaskGuidRequest {
  readonly task_guid: string;
}
export interface TaskFilter extends ListPage<string> {
  readonly domain?: string;
  readonly cell_id?: string;
  readonly state?: TaskState;
}
export interface CasTaskRequest extends TaskGuidRequest {
  readonly expected: ModificationTag;
}
export interface StartTaskRequest extends CasTaskRequest {
  readonly cell_id: string;
}
export interface CompleteTaskRequest extends CasTaskRequest {
  /** The cell reporting; must be the one running it. */
  readonly cell_id: string;
  readonly failed: boolean;
  readonly failure_reason: string;
  readonly result: string;
}
export interface FailTaskRequest extends CasTaskRequest {
  readonly failure_reason: string;
}
export interface CancelTaskRequest extends TaskGuidRequest {
  readonly expected?: ModificationTag;
}

/** The cell holding the data of one named volume of one instance index of a domain. */
export interface VolumePin {
  readonly domain: string;
  readonly volume: string;
  readonly index: number;
  readonly cell_id: string;
  readonly created_at: string;
}

export interface VolumePinFilter {
  readonly domain?: string;
  readonly cell_id?: string;
}

/** Releases the pins of a domain, narrowed to one volume and/or one index when given. */
export interface ReleaseVolumePinsRequest {
  readonly domain: string;
  readonly volume?: string;
  readonly index?: number;
}

export interface UpsertDomainRequest {
  readonly domain: string;
  /** 0 = fresh forever. */
  readonly ttl_ms: number;
  /** Claims the domain for this system; an upsert without one leaves the owner as it was. */
  readonly owner?: string;
}

/** What `ownerOf` looks up: a domain, or the domain of a DesiredLRP or of a task. */
export type OwnerOfRequest =
  | { readonly domain: string }
  | { readonly process_guid: string }
  | { readonly task_guid: string };

export interface OwnerOfResult {
  /** The system owning the domain; null when nobody does, or the record does not exist. */
  readonly owner: string | null;
}
export interface HeartbeatCellRequest {
  readonly presence: Omit<CellPresence, 'expires_at'>;
  readonly ttl_ms: number;
}
/** The presence as written, and what pacing it grants the cell (src/bbs/cell-pacing.ts). */
export type HeartbeatCellResponse = CellPresence & CellPacing;

export interface CellIdRequest {
  readonly cell_id: string;
}
