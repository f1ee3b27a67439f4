import type { SqlBackend, SqlDatabase } from '../../db/index.js';
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
} from '../bbs-store.js';
import type { ActualLRP, CellPresence, DesiredLRP, Domain, Task } from '../bbs-types.js';
import { ActualLrpStore } from './actual-lrp-store.js';
import { bbsMigrationList } from './bbs-migrations.js';
import { CellStore } from './cell-store.js';
import { DesiredLrpStore } from './desired-lrp-store.js';
import { DomainStore } from './domain-store.js';
import { EventStore } from './event-store.js';
import { LeaseStore } from './lease-store.js';
import { RequestOutbox } from './request-outbox.js';
import { SnapshotReads } from './snapshot-reads.js';
import { type SqlBbsStoreOptions, StoreContext } from './store-context.js';
import { TaskStore } from './task-store.js';

export type { SqlBbsStoreOptions } from './store-context.js';

/**
 * The BBS over SQL (SQLite or PostgreSQL, see db's SqlBackend), composed of one module per
 * resource. Every public mutation is one transaction: it reads the records it decides on (locked
 * on PostgreSQL), checks the caller's tag and the transition table, writes with a conditional
 * UPDATE/DELETE on the tag as well (`casWrite`), and appends its events through db's EventLog in
 * the same transaction.
 */
export class SqlBbsStore implements BbsStore {
  /** The database handle the store was opened on; history and the model share it. */
  readonly database: SqlDatabase;
  readonly #desired: DesiredLrpStore;
  readonly #actual: ActualLrpStore;
  readonly #outbox: RequestOutbox;
  readonly #tasks: TaskStore;
  readonly #domains: DomainStore;
  readonly #cells: CellStore;
  readonly #leases: LeaseStore;
  readonly #snapshots: SnapshotReads;
  readonly #events: EventStore;

  private constructor(database: SqlDatabase, options: SqlBbsStoreOptions) {
    this.database = database;
    const ctx = new StoreContext(database, options);
    this.#desired = new DesiredLrpStore(ctx);
    this.#actual = new ActualLrpStore(ctx);
    this.#outbox = new RequestOutbox(ctx);
    this.#tasks = new TaskStore(ctx);
    this.#domains = new DomainStore(ctx);
    this.#cells = new CellStore(ctx);
    this.#leases = new LeaseStore(ctx);
    this.#snapshots = new SnapshotReads(ctx);
    this.#events = new EventStore(ctx);
  }

  /**
   * Opens the store on a database handle (db's `openSqlDatabase`) and applies the BBS's pending
   * migrations under the migration lock; on failure the handle is closed.
   */
  static async open(database: SqlDatabase, options: SqlBbsStoreOptions = {}): Promise<SqlBbsStore> {
    const store = new SqlBbsStore(database, options);
    try {
      await database.migrate([bbsMigrationList], (options.now ?? (() => new Date()))());
    } catch (err) {
      await database.close();
      throw err;
    }
    return store;
  }

  get backend(): SqlBackend {
    return this.database.backend;
  }

  /** In-process wake-up after events committed on this database (SSE streams use it to skip a poll). */
  onEvents(listener: () => void): () => void {
    return this.database.events.onEvents(listener);
  }

  async close(): Promise<void> {
    await this.database.close();
  }

  // ---------------------------------------------------------------- DesiredLrpStore

  desireLRP(given: DesiredLRPDefinition): Promise<DesiredLRP> {
    return this.#desired.desireLRP(given);
  }

  getDesiredLRP(req: ProcessGuidRequest): Promise<DesiredLRP> {
    return this.#desired.getDesiredLRP(req);
  }

  listDesiredLRPs(req?: DesiredLRPFilter): Promise<DesiredLRP[]> {
    return this.#desired.listDesiredLRPs(req);
  }

  updateDesiredLRP(req: UpdateDesiredLRPRequest): Promise<DesiredLRP> {
    return this.#desired.updateDesiredLRP(req);
  }

  removeDesiredLRP(req: RemoveDesiredLRPRequest): Promise<void> {
    return this.#desired.removeDesiredLRP(req);
  }

  // ---------------------------------------------------------------- ActualLrpStore

  listActualLRPs(req?: ActualLRPFilter): Promise<ActualLRP[]> {
    return this.#actual.listActualLRPs(req);
  }

  getActualLRP(req: ActualLRPRef): Promise<ActualLRPGroup> {
    return this.#actual.getActualLRP(req);
  }

  createActualLRP(req: ActualLRPRef): Promise<ActualLRP> {
    return this.#actual.createActualLRP(req);
  }

  claimActualLRP(req: ClaimActualLRPRequest): Promise<ActualLRP> {
    return this.#actual.claimActualLRP(req);
  }

  startActualLRP(req: StartActualLRPRequest): Promise<ActualLRP> {
    return this.#actual.startActualLRP(req);
  }

  crashActualLRP(req: CrashActualLRPRequest): Promise<ActualLRP> {
    return this.#actual.crashActualLRP(req);
  }

  failActualLRP(req: FailActualLRPRequest): Promise<ActualLRP> {
    return this.#actual.failActualLRP(req);
  }

  unclaimActualLRP(req: CasActualLRPRequest): Promise<ActualLRP> {
    return this.#actual.unclaimActualLRP(req);
  }

  removeActualLRP(req: RemoveActualLRPRequest): Promise<void> {
    return this.#actual.removeActualLRP(req);
  }

  retireActualLRP(req: CasActualLRPRequest): Promise<RetireActualLRPResult> {
    return this.#actual.retireActualLRP(req);
  }

  evacuateRunningActualLRP(req: EvacuateRunningActualLRPRequest): Promise<ActualLRPGroup> {
    return this.#actual.evacuateRunningActualLRP(req);
  }

  removeEvacuatingActualLRP(req: RemoveEvacuatingActualLRPRequest): Promise<void> {
    return this.#actual.removeEvacuatingActualLRP(req);
  }

  // ---------------------------------------------------------------- RequestOutbox

  takeStartRequests(req: TakeRequestsRequest): Promise<StartRequestDelivery[]> {
    return this.#outbox.takeStartRequests(req);
  }

  ackStartRequests(req: AckRequestsRequest): Promise<void> {
    return this.#outbox.ackStartRequests(req);
  }

  takeTaskStartRequests(req: TakeRequestsRequest): Promise<TaskStartRequestDelivery[]> {
    return this.#outbox.takeTaskStartRequests(req);
  }

  ackTaskStartRequests(req: AckRequestsRequest): Promise<void> {
    return this.#outbox.ackTaskStartRequests(req);
  }

  takeStopRequests(req: TakeStopRequestsRequest): Promise<StopRequestDelivery[]> {
    return this.#outbox.takeStopRequests(req);
  }

  ackStopRequests(req: AckRequestsRequest): Promise<void> {
    return this.#outbox.ackStopRequests(req);
  }

  // ---------------------------------------------------------------- TaskStore

  desireTask(given: Parameters<BbsStore['desireTask']>[0]): Promise<Task> {
    return this.#tasks.desireTask(given);
  }

  getTask(req: TaskGuidRequest): Promise<Task> {
    return this.#tasks.getTask(req);
  }

  listTasks(req?: TaskFilter): Promise<Task[]> {
    return this.#tasks.listTasks(req);
  }

  startTask(req: StartTaskRequest): Promise<Task> {
    return this.#tasks.startTask(req);
  }

  completeTask(req: CompleteTaskRequest): Promise<Task> {
    return this.#tasks.completeTask(req);
  }

  failTask(req: FailTaskRequest): Promise<Task> {
    return this.#tasks.failTask(req);
  }

  cancelTask(req: CancelTaskRequest): Promise<Task> {
    return this.#tasks.cancelTask(req);
  }

  resolvingTask(req: CasTaskRequest): Promise<Task> {
    return this.#tasks.resolvingTask(req);
  }

  demoteResolvingTask(req: CasTaskRequest): Promise<Task> {
    return this.#tasks.demoteResolvingTask(req);
  }

  deleteTask(req: CasTaskRequest): Promise<void> {
    return this.#tasks.deleteTask(req);
  }

  // ---------------------------------------------------------------- DomainStore

  upsertDomain(req: UpsertDomainRequest): Promise<Domain> {
    return this.#domains.upsertDomain(req);
  }

  listDomains(): Promise<Domain[]> {
    return this.#domains.listDomains();
  }

  ownerOf(req: OwnerOfRequest): Promise<OwnerOfResult> {
    return this.#domains.ownerOf(req);
  }

  // ---------------------------------------------------------------- CellStore

  heartbeatCell(req: HeartbeatCellRequest): Promise<CellPresence> {
    return this.#cells.heartbeatCell(req);
  }

  listCells(): Promise<CellPresence[]> {
    return this.#cells.listCells();
  }

  removeCell(req: CellIdRequest): Promise<void> {
    return this.#cells.removeCell(req);
  }

  // ---------------------------------------------------------------- LeaseStore

  acquireLease(req: AcquireLeaseRequest): Promise<LeaseResult> {
    return this.#leases.acquireLease(req);
  }

  releaseLease(req: ReleaseLeaseRequest): Promise<void> {
    return this.#leases.releaseLease(req);
  }

  listLeases(): Promise<Lease[]> {
    return this.#leases.listLeases();
  }

  // ---------------------------------------------------------------- SnapshotReads

  readSnapshot(): Promise<BbsSnapshot> {
    return this.#snapshots.readSnapshot();
  }

  readConvergenceSnapshot(): Promise<ConvergenceSnapshot> {
    return this.#snapshots.readConvergenceSnapshot();
  }

  countRecords(): Promise<RecordCounts> {
    return this.#snapshots.countRecords();
  }

  // ---------------------------------------------------------------- EventStore

  readEvents(req: ReadEventsRequest): Promise<BbsEvent[]> {
    return this.#events.readEvents(req);
  }

  pruneEvents(req: PruneEventsRequest): Promise<number> {
    return this.#events.pruneEvents(req);
  }
}
