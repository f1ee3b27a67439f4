import { InvalidArgumentError } from '../../core/index.js';
import type { SqlBackend, SqlDatabase } from '../../db/index.js';
import type { BbsStore } from '../bbs-store.js';
import { cellPassDigest } from '../cell-pass-digest.js';
import { ActualLrpStore } from './actual-lrp-store.js';
import { bbsMigrationList } from './bbs-migrations.js';
import { readIdleCellPass } from './cell-pass-reads.js';
import { CellStore } from './cell-store.js';
import { DesiredLrpStore } from './desired-lrp-store.js';
import { DomainStore } from './domain-store.js';
import { EventStore } from './event-store.js';
import { LeaseStore } from './lease-store.js';
import { RequestOutbox } from './request-outbox.js';
import { SnapshotReads } from './snapshot-reads.js';
import { type SqlBbsStoreOptions, StoreContext } from './store-context.js';
import { TaskOutputStore, taskOutputMigrationList } from './task-output-store.js';
import { TaskStore } from './task-store.js';
import { VolumePinStore } from './volume-pins.js';

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
  /** Task output archives, on the same database (deleteTask deletes a task's archive with it). */
  readonly taskOutputs: TaskOutputStore;
  readonly #desired: DesiredLrpStore;
  readonly #actual: ActualLrpStore;
  readonly #outbox: RequestOutbox;
  readonly #tasks: TaskStore;
  readonly #domains: DomainStore;
  readonly #cells: CellStore;
  readonly #leases: LeaseStore;
  readonly #snapshots: SnapshotReads;
  readonly #events: EventStore;
  readonly #pins: VolumePinStore;
  readonly #ctx: StoreContext;

  private constructor(database: SqlDatabase, options: SqlBbsStoreOptions) {
    this.database = database;
    const ctx = new StoreContext(database, options);
    this.#ctx = ctx;
    this.taskOutputs = new TaskOutputStore(database, ctx.now);
    this.#desired = new DesiredLrpStore(ctx);
    this.#actual = new ActualLrpStore(ctx);
    this.#outbox = new RequestOutbox(ctx);
    this.#tasks = new TaskStore(ctx);
    this.#domains = new DomainStore(ctx);
    this.#cells = new CellStore(ctx);
    this.#leases = new LeaseStore(ctx);
    this.#snapshots = new SnapshotReads(ctx);
    this.#events = new EventStore(ctx);
    this.#pins = new VolumePinStore(ctx);
  }

  /**
   * Opens the store on a database handle (db's `openSqlDatabase`) and applies the BBS's pending
   * migrations under the migration lock; on failure the handle is closed.
   */
  static async open(database: SqlDatabase, options: SqlBbsStoreOptions = {}): Promise<SqlBbsStore> {
    const store = new SqlBbsStore(database, options);
    try {
      await database.migrate(
        [bbsMigrationList, taskOutputMigrationList],
        (options.now ?? (() => new Date()))(),
      );
    } catch (err) {
      await database.close();
      throw err;
    }
    return store;
  }

  get backend(): SqlBackend {
    return this.database.backend;
  }

  /**
   * In-process wake-up after events committed on this database, told their types (SSE streams use
   * it to skip a poll; the auctioneer to start a batch at once).
   */
  onEvents(listener: (types: readonly string[]) => void): () => void {
    return this.database.events.onEvents(listener);
  }

  async close(): Promise<void> {
    await this.database.close();
  }

  // The store's operations, each delegated to the module of its resource.
  // DesiredLrpStore
  desireLRP: BbsStore['desireLRP'] = (req) => this.#desired.desireLRP(req);
  getDesiredLRP: BbsStore['getDesiredLRP'] = (req) => this.#desired.getDesiredLRP(req);
  listDesiredLRPs: BbsStore['listDesiredLRPs'] = (req) => this.#desired.listDesiredLRPs(req);
  updateDesiredLRP: BbsStore['updateDesiredLRP'] = (req) => this.#desired.updateDesiredLRP(req);
  removeDesiredLRP: BbsStore['removeDesiredLRP'] = (req) => this.#desired.removeDesiredLRP(req);

  // ActualLrpStore
  listActualLRPs: BbsStore['listActualLRPs'] = (req) => this.#actual.listActualLRPs(req);
  getActualLRP: BbsStore['getActualLRP'] = (req) => this.#actual.getActualLRP(req);
  createActualLRP: BbsStore['createActualLRP'] = (req) => this.#actual.createActualLRP(req);
  claimActualLRP: BbsStore['claimActualLRP'] = (req) => this.#actual.claimActualLRP(req);
  claimActualLRPs: BbsStore['claimActualLRPs'] = (req) => this.#actual.claimActualLRPs(req);
  startActualLRPs: BbsStore['startActualLRPs'] = (req) => this.#actual.startActualLRPs(req);
  startActualLRP: BbsStore['startActualLRP'] = (req) => this.#actual.startActualLRP(req);
  crashActualLRP: BbsStore['crashActualLRP'] = (req) => this.#actual.crashActualLRP(req);
  failActualLRP: BbsStore['failActualLRP'] = (req) => this.#actual.failActualLRP(req);
  unclaimActualLRP: BbsStore['unclaimActualLRP'] = (req) => this.#actual.unclaimActualLRP(req);
  unclaimActualLRPs: BbsStore['unclaimActualLRPs'] = (req) => this.#actual.unclaimActualLRPs(req);
  removeActualLRP: BbsStore['removeActualLRP'] = (req) => this.#actual.removeActualLRP(req);
  retireActualLRP: BbsStore['retireActualLRP'] = (req) => this.#actual.retireActualLRP(req);
  evacuateRunningActualLRP: BbsStore['evacuateRunningActualLRP'] = (req) =>
    this.#actual.evacuateRunningActualLRP(req);
  removeEvacuatingActualLRP: BbsStore['removeEvacuatingActualLRP'] = (req) =>
    this.#actual.removeEvacuatingActualLRP(req);

  // RequestOutbox
  takeStartRequests: BbsStore['takeStartRequests'] = (req) => this.#outbox.takeStartRequests(req);
  ackStartRequests: BbsStore['ackStartRequests'] = (req) => this.#outbox.ackStartRequests(req);
  takeTaskStartRequests: BbsStore['takeTaskStartRequests'] = (req) => this.#outbox.takeTaskStartRequests(req);
  ackTaskStartRequests: BbsStore['ackTaskStartRequests'] = (req) => this.#outbox.ackTaskStartRequests(req);
  takeStopRequests: BbsStore['takeStopRequests'] = (req) => this.#outbox.takeStopRequests(req);
  ackStopRequests: BbsStore['ackStopRequests'] = (req) => this.#outbox.ackStopRequests(req);
  cellPass: BbsStore['cellPass'] = async (req) => {
    // Without a cell, the take and the lists would be every cell's.
    if (!req.cell_id) throw new InvalidArgumentError('cell_id must not be empty', { field: 'cell_id' });
    // An idle cell's pass reads whether a stop waits and its records' keys and tags, not the
    // records, takes no write lock, and answers in a few bytes: the lists were most of an idle
    // cluster's reads and bytes sent. A stop request written after this read is the next pass's,
    // as one written after a take is.
    if (req.known_digest !== undefined) {
      const idle = await readIdleCellPass(this.#ctx, req.cell_id);
      if (!idle.stopWaiting && idle.digest === req.known_digest)
        return { stops: [], actual_lrps: [], tasks: [], digest: idle.digest, unchanged: true };
    }
    const stops = await this.#outbox.takeStopRequests({
      cell_id: req.cell_id,
      limit: req.stop_limit,
      visibility_ms: req.visibility_ms,
    });
    const actual_lrps = await this.#actual.listActualLRPs({ cell_id: req.cell_id });
    const tasks = await this.#tasks.listTasks({ cell_id: req.cell_id });
    return { stops, actual_lrps, tasks, digest: cellPassDigest(actual_lrps, tasks) };
  };
  /** Start requests not yet acknowledged, counted up to `limit` (the API's admission check). */
  countPendingStarts = (limit: number): Promise<number> => this.#outbox.countPendingStarts(limit);

  // TaskStore
  desireTask: BbsStore['desireTask'] = (req) => this.#tasks.desireTask(req);
  getTask: BbsStore['getTask'] = (req) => this.#tasks.getTask(req);
  listTasks: BbsStore['listTasks'] = (req) => this.#tasks.listTasks(req);
  startTask: BbsStore['startTask'] = (req) => this.#tasks.startTask(req);
  completeTask: BbsStore['completeTask'] = (req) => this.#tasks.completeTask(req);
  failTask: BbsStore['failTask'] = (req) => this.#tasks.failTask(req);
  cancelTask: BbsStore['cancelTask'] = (req) => this.#tasks.cancelTask(req);
  resolvingTask: BbsStore['resolvingTask'] = (req) => this.#tasks.resolvingTask(req);
  demoteResolvingTask: BbsStore['demoteResolvingTask'] = (req) => this.#tasks.demoteResolvingTask(req);
  deleteTask: BbsStore['deleteTask'] = (req) => this.#tasks.deleteTask(req);

  // DomainStore
  upsertDomain: BbsStore['upsertDomain'] = (req) => this.#domains.upsertDomain(req);
  listDomains: BbsStore['listDomains'] = () => this.#domains.listDomains();
  ownerOf: BbsStore['ownerOf'] = (req) => this.#domains.ownerOf(req);

  // Volume pins
  listVolumePins: BbsStore['listVolumePins'] = (req) => this.#pins.listVolumePins(req);
  releaseVolumePins: BbsStore['releaseVolumePins'] = (req) => this.#pins.releaseVolumePins(req);

  // CellStore
  heartbeatCell: BbsStore['heartbeatCell'] = (req) => this.#cells.heartbeatCell(req);
  listCells: BbsStore['listCells'] = () => this.#cells.listCells();
  removeCell: BbsStore['removeCell'] = (req) => this.#cells.removeCell(req);
  expireCells: BbsStore['expireCells'] = () => this.#cells.expireCells();

  // LeaseStore
  acquireLease: BbsStore['acquireLease'] = (req) => this.#leases.acquireLease(req);
  releaseLease: BbsStore['releaseLease'] = (req) => this.#leases.releaseLease(req);
  listLeases: BbsStore['listLeases'] = () => this.#leases.listLeases();

  // SnapshotReads
  readSnapshot: BbsStore['readSnapshot'] = () => this.#snapshots.readSnapshot();
  readConvergenceSnapshot: BbsStore['readConvergenceSnapshot'] = () =>
    this.#snapshots.readConvergenceSnapshot();
  countRecords: BbsStore['countRecords'] = () => this.#snapshots.countRecords();

  // EventStore
  readEvents: BbsStore['readEvents'] = (req) => this.#events.readEvents(req);
  /** The newest event's id, for streams that start from now (`GET /v1/events?after=now`). */
  headEventId = (): Promise<string> => this.#events.headEventId();
  pruneEvents: BbsStore['pruneEvents'] = (req) => this.#events.pruneEvents(req);
}
