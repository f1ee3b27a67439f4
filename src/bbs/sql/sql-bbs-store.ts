import { randomUUID } from 'node:crypto';
import { CompiledQuery, type Kysely } from 'kysely';
import { BerthError, InvalidArgumentError, NotFoundError } from '../../core/index.js';
import { actualLrpStates, assertActualLRPTransition } from '../actual-lrp-transitions.js';
import type {
  AckRequestsRequest,
  AcquireLeaseRequest,
  ActualLRPFilter,
  ActualLRPGroup,
  ActualLRPRef,
  BbsEvent,
  BbsEventBody,
  BbsSnapshot,
  BbsStore,
  CancelTaskRequest,
  CasActualLRPRequest,
  CasTaskRequest,
  CellIdRequest,
  ClaimActualLRPRequest,
  CompleteTaskRequest,
  ConvergenceActualLRP,
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
  ListPage,
  LRPStopRequest,
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
  TaskStartRequest,
  TaskStartRequestDelivery,
  UpdateDesiredLRPRequest,
  UpsertDomainRequest,
} from '../bbs-store.js';
import type {
  ActualLRP,
  ActualLRPInstanceKey,
  ActualLRPState,
  CellPresence,
  DesiredLRP,
  Domain,
  ModificationTag,
  PortMapping,
  Task,
  TaskState,
} from '../bbs-types.js';
import { CasConflictError, tagsEqual } from '../cas-conflict-error.js';
import {
  desiredWithDefaults,
  taskWithDefaults,
  validateInstances,
  validateRoutes,
} from '../definition-defaults.js';
import { assertTaskTransition, taskDeletableStates, taskStates } from '../task-transitions.js';
import type { ActualLrpRow, BbsDatabase, DesiredLrpRow, TaskRow } from './bbs-database.js';
import { applyMigrations } from './bbs-migrations.js';
import { actualColumns, hotSqlByKind } from './hot-statements.js';
import type { RowQuery, SqlBackend } from './sql-backend.js';

type Db = Kysely<BbsDatabase>;

export interface SqlBbsStoreOptions {
  /** The store's clock; tests inject one. */
  readonly now?: () => Date;
  /** Called once per CAS that lost, with the operation's name (for `/metrics`). */
  readonly onCasConflict?: (operation: string) => void;
}

/** Rows per multi-row INSERT: far below SQLite's and PostgreSQL's bound-parameter limits. */
const insertChunk = 400;
const maxEventsPerRead = 10_000;

/** One write transaction: its handle, its clock reading, and the events it will append. */
interface Tx {
  readonly db: Db;
  readonly now: string;
  readonly nowMs: number;
  readonly events: BbsEventBody[];
}

/**
 * The BBS over SQL (SQLite or PostgreSQL, see SqlBackend). Every public mutation is one
 * transaction: it reads the records it decides on (locked on PostgreSQL), checks the caller's tag
 * and the transition table, writes with a conditional UPDATE/DELETE on the tag as well, and appends
 * its events to the `events` table in the same transaction.
 */
export class SqlBbsStore implements BbsStore {
  readonly backend: SqlBackend;
  readonly #now: () => Date;
  readonly #onCasConflict: (operation: string) => void;
  readonly #listeners = new Set<() => void>();
  readonly #sql: (typeof hotSqlByKind)['sqlite'];

  private constructor(backend: SqlBackend, options: SqlBbsStoreOptions) {
    this.backend = backend;
    this.#sql = hotSqlByKind[backend.kind];
    this.#now = options.now ?? (() => new Date());
    this.#onCasConflict = options.onCasConflict ?? (() => {});
  }

  /** Opens the store and applies pending migrations under the migration lock. */
  static async open(backend: SqlBackend, options: SqlBbsStoreOptions = {}): Promise<SqlBbsStore> {
    const store = new SqlBbsStore(backend, options);
    try {
      await backend.migrate((tx) => applyMigrations(tx, backend.kind, store.#now().toISOString()));
    } catch (err) {
      await backend.close();
      throw err;
    }
    return store;
  }

  /** In-process wake-up after this store committed events (SSE streams use it to skip a poll). */
  onEvents(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    await this.backend.close();
  }

  // ---------------------------------------------------------------- transactions

  private async mutate<T>(operation: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      let appended = false;
      const result = await this.backend.write(async (db) => {
        const date = this.#now();
        const tx: Tx = { db, now: date.toISOString(), nowMs: date.getTime(), events: [] };
        const value = await fn(tx);
        if (tx.events.length === 1) {
          const { type, ...data } = tx.events[0]!;
          await db.executeQuery(
            CompiledQuery.raw(this.#sql.insertEvent, [type, JSON.stringify(data), tx.now]),
          );
          appended = true;
        } else if (tx.events.length > 1) {
          for (let i = 0; i < tx.events.length; i += insertChunk) {
            await db
              .insertInto('events')
              .values(
                tx.events.slice(i, i + insertChunk).map((event) => {
                  const { type, ...data } = event;
                  return { type, data: JSON.stringify(data), created_at: tx.now };
                }),
              )
              .execute();
          }
          appended = true;
        }
        return value;
      });
      if (appended) for (const listener of this.#listeners) listener();
      return result;
    } catch (err) {
      if (err instanceof CasConflictError) this.#onCasConflict(operation);
      throw err;
    }
  }

  // ---------------------------------------------------------------- DesiredLRPs

  async desireLRP(given: DesiredLRPDefinition): Promise<DesiredLRP> {
    const req = desiredWithDefaults(given);
    validateDesired(req);
    return this.mutate('desireLRP', async (tx) => {
      const existing = await this.loadDesired(tx.db, req.process_guid, true);
      if (existing) {
        throw new BerthError('already_exists', `Cannot desire LRP "${req.process_guid}": it already exists`, {
          kind: 'DesiredLRP',
          id: req.process_guid,
          current: existing,
        });
      }
      const desired: DesiredLRP = {
        ...stripUndefined(req),
        created_at: tx.now,
        modification_tag: { epoch: randomUUID(), index: 0 },
      };
      try {
        await tx.db.insertInto('desired_lrps').values(desiredToRow(desired)).execute();
      } catch (err) {
        if (this.backend.isUniqueViolation(err)) {
          throw new BerthError(
            'already_exists',
            `Cannot desire LRP "${req.process_guid}": it already exists`,
            {
              kind: 'DesiredLRP',
              id: req.process_guid,
            },
          );
        }
        throw err;
      }
      tx.events.push({ type: 'desired_lrp_created', desired_lrp: desired });
      await this.reconcileIndices(tx, desired);
      return desired;
    });
  }

  async getDesiredLRP(req: ProcessGuidRequest): Promise<DesiredLRP> {
    const desired = await this.loadDesired(this.backend.db, req.process_guid, false);
    if (!desired) throw new NotFoundError('DesiredLRP', req.process_guid);
    return desired;
  }

  async listDesiredLRPs(req: DesiredLRPFilter = {}): Promise<DesiredLRP[]> {
    validatePage(req);
    if (req.domain === undefined && req.limit === undefined && req.after === undefined)
      return this.backend.readRows(readAllDesired);
    return listDesired(this.backend.db, req);
  }

  async updateDesiredLRP(req: UpdateDesiredLRPRequest): Promise<DesiredLRP> {
    const { update } = req;
    if (update.instances !== undefined) validateInstances(update.instances);
    if (update.routes !== undefined) validateRoutes(update.routes);
    return this.mutate('updateDesiredLRP', async (tx) => {
      const before = await this.requireDesired(tx, req.process_guid, req.expected);
      const after: DesiredLRP = {
        ...before,
        ...(update.instances !== undefined ? { instances: update.instances } : {}),
        ...(update.routes !== undefined ? { routes: update.routes } : {}),
        ...(update.annotation !== undefined ? { annotation: update.annotation } : {}),
        modification_tag: nextTag(before.modification_tag),
      };
      const result = await tx.db
        .updateTable('desired_lrps')
        .set({
          instances: after.instances,
          routes: JSON.stringify(after.routes),
          annotation: after.annotation,
          tag_index: after.modification_tag.index,
        })
        .where('process_guid', '=', before.process_guid)
        .where('tag_epoch', '=', before.modification_tag.epoch)
        .where('tag_index', '=', before.modification_tag.index)
        .executeTakeFirst();
      if (result.numUpdatedRows !== 1n)
        await this.desiredConflict(tx, before.process_guid, req.expected ?? null);
      tx.events.push({ type: 'desired_lrp_changed', before, after });
      if (after.instances !== before.instances) await this.reconcileIndices(tx, after);
      return after;
    });
  }

  async removeDesiredLRP(req: RemoveDesiredLRPRequest): Promise<void> {
    await this.mutate('removeDesiredLRP', async (tx) => {
      const before = await this.requireDesired(tx, req.process_guid, req.expected);
      const result = await tx.db
        .deleteFrom('desired_lrps')
        .where('process_guid', '=', before.process_guid)
        .where('tag_epoch', '=', before.modification_tag.epoch)
        .where('tag_index', '=', before.modification_tag.index)
        .executeTakeFirst();
      if (result.numDeletedRows !== 1n)
        await this.desiredConflict(tx, before.process_guid, req.expected ?? null);
      tx.events.push({ type: 'desired_lrp_removed', desired_lrp: before });
      await this.reconcileIndices(tx, { ...before, instances: 0 });
    });
  }

  /**
   * Seed 002's ∆ for one DesiredLRP, applied inside the caller's transaction: every missing index
   * below `instances` gets an UNCLAIMED ActualLRP and a start request; every index at or above it
   * is retired (UNCLAIMED/CRASHED deleted, CLAIMED/RUNNING asked to stop on their cell).
   */
  private async reconcileIndices(tx: Tx, desired: DesiredLRP): Promise<void> {
    const actuals = await this.loadActualsOf(tx.db, desired.process_guid, true);
    const present = new Set<number>();
    const unstarted: ActualLRP[] = [];
    for (const lrp of actuals) {
      if (lrp.evacuating) continue;
      present.add(lrp.index);
      if (lrp.index < desired.instances) continue;
      if (lrp.state === 'UNCLAIMED' || lrp.state === 'CRASHED') unstarted.push(lrp);
      else await this.retire(tx, lrp);
    }
    await this.deleteUnstarted(tx, desired, unstarted);
    const missing: number[] = [];
    for (let index = 0; index < desired.instances; index++) if (!present.has(index)) missing.push(index);
    if (missing.length > 0) {
      const created = missing.map((index) =>
        newUnclaimed(desired.process_guid, index, desired.domain, tx.now),
      );
      for (let i = 0; i < created.length; i += insertChunk) {
        await tx.db
          .insertInto('actual_lrps')
          .values(created.slice(i, i + insertChunk).map(actualToRow))
          .execute();
      }
      for (const lrp of created) tx.events.push({ type: 'actual_lrp_created', actual_lrp: lrp });
      await this.recordStartRequests(tx, desired, missing);
    }
    // A start request for an index that is no longer desired must not reach the auctioneer.
    await tx.db
      .deleteFrom('start_requests')
      .where('kind', '=', 'lrp')
      .where('guid', '=', desired.process_guid)
      .where('idx', '>=', desired.instances)
      .execute();
  }

  /**
   * Retires the UNCLAIMED and CRASHED instances at or above `instances` in one statement (their
   * start requests go in the statement after the caller's loop): one row at a time, scaling 10,000
   * instances down took 6 s on SQLite and 14 s on PostgreSQL. The rows were read, and on
   * PostgreSQL locked, in this transaction, so the count deleted must be the count read.
   */
  private async deleteUnstarted(tx: Tx, desired: DesiredLRP, lrps: readonly ActualLRP[]): Promise<void> {
    if (lrps.length === 0) return;
    const result = await tx.db
      .deleteFrom('actual_lrps')
      .where('process_guid', '=', desired.process_guid)
      .where('evacuating', '=', 0)
      .where('idx', '>=', desired.instances)
      .where('state', 'in', ['UNCLAIMED', 'CRASHED'])
      .executeTakeFirst();
    if (result.numDeletedRows !== BigInt(lrps.length)) {
      throw new BerthError(
        'conflict',
        `ActualLRPs of "${desired.process_guid}" changed while being retired`,
        {
          kind: 'ActualLRP',
          id: desired.process_guid,
        },
      );
    }
    for (const lrp of lrps) tx.events.push({ type: 'actual_lrp_removed', actual_lrp: lrp });
  }

  // ---------------------------------------------------------------- ActualLRPs: reads

  async listActualLRPs(req: ActualLRPFilter = {}): Promise<ActualLRP[]> {
    validatePage(req);
    const unfiltered =
      req.process_guid === undefined &&
      req.domain === undefined &&
      req.cell_id === undefined &&
      req.limit === undefined &&
      req.after === undefined;
    if (unfiltered) return this.backend.readRows(readAllActual);
    return listActual(this.backend.db, req);
  }

  async getActualLRP(req: ActualLRPRef): Promise<ActualLRPGroup> {
    const rows = await this.backend.db
      .selectFrom('actual_lrps')
      .selectAll()
      .where('process_guid', '=', req.process_guid)
      .where('idx', '=', req.index)
      .execute();
    const group = { instance: null as ActualLRP | null, evacuating: null as ActualLRP | null };
    for (const row of rows) {
      const lrp = rowToActual(row);
      if (lrp.evacuating) group.evacuating = lrp;
      else group.instance = lrp;
    }
    if (!group.instance && !group.evacuating) throw new NotFoundError('ActualLRP', refName(req));
    return group;
  }

  // ---------------------------------------------------------------- ActualLRPs: actions

  async createActualLRP(req: ActualLRPRef): Promise<ActualLRP> {
    return this.mutate('createActualLRP', async (tx) => {
      const desired = await this.loadDesired(tx.db, req.process_guid, true);
      if (!desired) throw new NotFoundError('DesiredLRP', req.process_guid);
      if (!Number.isInteger(req.index) || req.index < 0 || req.index >= desired.instances) {
        throw new InvalidArgumentError(
          `Cannot create ActualLRP ${refName(req)}: index must be below the ${desired.instances} desired instances`,
          { field: 'index' },
        );
      }
      const existing = await this.loadActual(tx.db, req, false, true);
      if (existing) {
        throw new BerthError('already_exists', `Cannot create ActualLRP ${refName(req)}: it already exists`, {
          kind: 'ActualLRP',
          id: refName(req),
          current: existing,
        });
      }
      const lrp = newUnclaimed(req.process_guid, req.index, desired.domain, tx.now);
      await tx.db.insertInto('actual_lrps').values(actualToRow(lrp)).execute();
      tx.events.push({ type: 'actual_lrp_created', actual_lrp: lrp });
      await this.recordStartRequests(tx, desired, [req.index]);
      return lrp;
    });
  }

  async claimActualLRP(req: ClaimActualLRPRequest): Promise<ActualLRP> {
    return this.mutate('claimActualLRP', async (tx) => {
      const before = await this.requireActual(tx, req, req.expected);
      assertActualLRPTransition(before.state, 'CLAIMED', refName(req));
      if (before.state === 'CLAIMED') assertOwner(before, req.instance_key, 'claim');
      return this.replaceActual(tx, before, {
        ...before,
        state: 'CLAIMED',
        instance_guid: req.instance_key.instance_guid,
        cell_id: req.instance_key.cell_id,
        placement_error: '',
        since: before.state === 'CLAIMED' ? before.since : tx.now,
      });
    });
  }

  async startActualLRP(req: StartActualLRPRequest): Promise<ActualLRP> {
    return this.mutate('startActualLRP', async (tx) => {
      if (req.expected === null) {
        const lrp: ActualLRP = {
          ...newUnclaimed(req.process_guid, req.index, await this.domainFor(tx, req), tx.now),
          state: 'RUNNING',
          instance_guid: req.instance_key.instance_guid,
          cell_id: req.instance_key.cell_id,
          address: req.net_info.address,
          ports: req.net_info.ports,
        };
        return this.createActual(tx, lrp);
      }
      const before = await this.requireActual(tx, req, req.expected);
      assertActualLRPTransition(before.state, 'RUNNING', refName(req));
      // RUNNING on another cell stays theirs (seed: "RUNNING on O" → the rep deletes its container).
      if (before.state === 'RUNNING') assertOwner(before, req.instance_key, 'start');
      return this.replaceActual(tx, before, {
        ...before,
        state: 'RUNNING',
        instance_guid: req.instance_key.instance_guid,
        cell_id: req.instance_key.cell_id,
        address: req.net_info.address,
        ports: req.net_info.ports,
        placement_error: '',
        since: before.state === 'RUNNING' ? before.since : tx.now,
      });
    });
  }

  async crashActualLRP(req: CrashActualLRPRequest): Promise<ActualLRP> {
    if (!Number.isInteger(req.crash_count) || req.crash_count < 0) {
      throw new InvalidArgumentError('crash_count must be a non-negative integer', { field: 'crash_count' });
    }
    return this.mutate('crashActualLRP', async (tx) => {
      const crash = {
        crash_count: req.crash_count,
        last_crashed_at: req.last_crashed_at,
        crash_reason: req.crash_reason,
        instance_guid: '',
        cell_id: '',
        address: '',
        ports: [] as PortMapping[],
        state: req.state,
        since: tx.now,
      };
      let lrp: ActualLRP;
      if (req.expected === null) {
        const base = newUnclaimed(req.process_guid, req.index, await this.domainFor(tx, req), tx.now);
        lrp = await this.createActual(tx, { ...base, ...crash });
      } else {
        const before = await this.requireActual(tx, req, req.expected);
        assertActualLRPTransition(before.state, req.state, refName(req));
        assertOwner(before, req.instance_key, 'crash');
        lrp = await this.replaceActual(tx, before, { ...before, ...crash, placement_error: '' });
      }
      if (lrp.state === 'UNCLAIMED') await this.requestStartIfDesired(tx, lrp);
      return lrp;
    });
  }

  async failActualLRP(req: FailActualLRPRequest): Promise<ActualLRP> {
    return this.mutate('failActualLRP', async (tx) => {
      const before = await this.requireActual(tx, req, req.expected);
      if (req.instance_key && before.state === 'CLAIMED') {
        assertOwner(before, req.instance_key, 'fail');
        // Given back unplaceable: no start request (see FailActualLRPRequest.instance_key).
        return this.replaceActual(tx, before, {
          ...before,
          state: 'UNCLAIMED',
          instance_guid: '',
          cell_id: '',
          address: '',
          ports: [],
          placement_error: req.placement_error,
          since: tx.now,
        });
      }
      if (before.state !== 'UNCLAIMED') {
        throw new BerthError(
          'conflict',
          `Cannot fail placement of ActualLRP ${refName(req)}: current state is ${before.state}, only UNCLAIMED instances (or CLAIMED ones by their claimant) can fail placement`,
          { kind: 'ActualLRP', id: refName(req), current: before },
        );
      }
      return this.replaceActual(tx, before, { ...before, placement_error: req.placement_error });
    });
  }

  async unclaimActualLRP(req: CasActualLRPRequest): Promise<ActualLRP> {
    return this.mutate('unclaimActualLRP', async (tx) => {
      const before = await this.requireActual(tx, req, req.expected);
      assertActualLRPTransition(before.state, 'UNCLAIMED', refName(req));
      const after = await this.replaceActual(tx, before, {
        ...before,
        state: 'UNCLAIMED',
        instance_guid: '',
        cell_id: '',
        address: '',
        ports: [],
        placement_error: '',
        since: tx.now,
      });
      await this.requestStartIfDesired(tx, after);
      return after;
    });
  }

  async removeActualLRP(req: RemoveActualLRPRequest): Promise<void> {
    await this.mutate('removeActualLRP', async (tx) => {
      const before = await this.requireActual(tx, req, req.expected);
      if (req.instance_key) assertOwner(before, req.instance_key, 'remove');
      await this.deleteActual(tx, before);
    });
  }

  async retireActualLRP(req: CasActualLRPRequest): Promise<RetireActualLRPResult> {
    return this.mutate('retireActualLRP', async (tx) => {
      const before = await this.requireActual(tx, req, req.expected);
      return this.retire(tx, before);
    });
  }

  async evacuateRunningActualLRP(req: EvacuateRunningActualLRPRequest): Promise<ActualLRPGroup> {
    return this.mutate('evacuateRunningActualLRP', async (tx) => {
      const before = await this.requireActual(tx, req, req.expected);
      if (before.state !== 'RUNNING') {
        throw new BerthError(
          'conflict',
          `Cannot evacuate ActualLRP ${refName(req)}: current state is ${before.state}, only RUNNING instances evacuate`,
          { kind: 'ActualLRP', id: refName(req), current: before },
        );
      }
      assertOwner(before, req.instance_key, 'evacuate');
      const previous = await this.loadActual(tx.db, req, true, true);
      if (previous && previous.instance_guid !== req.instance_key.instance_guid) {
        throw new BerthError(
          'conflict',
          `Cannot evacuate ActualLRP ${refName(req)}: instance ${previous.instance_guid} on ${previous.cell_id} is already evacuating`,
          { kind: 'ActualLRP', id: refName(req), current: previous },
        );
      }
      const evacuating: ActualLRP = {
        ...before,
        evacuating: true,
        address: req.net_info.address,
        ports: req.net_info.ports,
        modification_tag: previous ? nextTag(previous.modification_tag) : { epoch: randomUUID(), index: 0 },
      };
      if (previous) await this.replaceActual(tx, previous, evacuating);
      else await this.createActual(tx, evacuating);
      const instance = await this.replaceActual(tx, before, {
        ...before,
        state: 'UNCLAIMED',
        instance_guid: '',
        cell_id: '',
        address: '',
        ports: [],
        since: tx.now,
      });
      await this.requestStartIfDesired(tx, instance);
      return { instance, evacuating };
    });
  }

  async removeEvacuatingActualLRP(req: RemoveEvacuatingActualLRPRequest): Promise<void> {
    await this.mutate('removeEvacuatingActualLRP', async (tx) => {
      const before = await this.loadActual(tx.db, req, true, this.backend.lockRows);
      if (!before) throw new NotFoundError('evacuating ActualLRP', refName(req));
      if (!tagsEqual(before.modification_tag, req.expected)) {
        throw new CasConflictError('evacuating ActualLRP', refName(req), req.expected, before);
      }
      assertOwner(before, req.instance_key, 'remove the evacuating copy of');
      await this.deleteActual(tx, before);
    });
  }

  // ---------------------------------------------------------------- outboxes

  async takeStartRequests(req: TakeRequestsRequest): Promise<StartRequestDelivery[]> {
    const rows = await this.takeStartRows('lrp', req);
    const byGuid = new Map<string, { ids: number[]; indices: number[]; row: (typeof rows)[number] }>();
    for (const row of rows) {
      const group = byGuid.get(row.guid) ?? { ids: [], indices: [], row };
      group.ids.push(Number(row.id));
      if (!group.indices.includes(row.idx)) group.indices.push(row.idx);
      byGuid.set(row.guid, group);
    }
    return [...byGuid.values()].map(({ ids, indices, row }) => {
      const payload = JSON.parse(row.payload) as {
        memory_mb: number;
        disk_mb: number;
        placement_tags: string[];
      };
      return {
        ids,
        request: {
          process_guid: row.guid,
          domain: row.domain,
          indices: indices.sort((a, b) => a - b),
          memory_mb: payload.memory_mb,
          disk_mb: payload.disk_mb,
          placement_tags: payload.placement_tags,
        },
      };
    });
  }

  async ackStartRequests(req: AckRequestsRequest): Promise<void> {
    await this.ackRequests('start_requests', 'lrp', req);
  }

  async takeTaskStartRequests(req: TakeRequestsRequest): Promise<TaskStartRequestDelivery[]> {
    const rows = await this.takeStartRows('task', req);
    return rows.map((row) => {
      const payload = JSON.parse(row.payload) as Omit<TaskStartRequest, 'task_guid' | 'domain'>;
      return { id: Number(row.id), request: { task_guid: row.guid, domain: row.domain, ...payload } };
    });
  }

  async ackTaskStartRequests(req: AckRequestsRequest): Promise<void> {
    await this.ackRequests('start_requests', 'task', req);
  }

  async takeStopRequests(req: TakeStopRequestsRequest): Promise<StopRequestDelivery[]> {
    const rows = await this.takeStopRows(req);
    return rows.map((row) => ({
      id: Number(row.id),
      kind: row.kind === 'task' ? 'task' : 'lrp',
      request: {
        process_guid: row.guid,
        index: row.idx,
        instance_guid: row.instance_guid,
        cell_id: row.cell_id,
      },
    }));
  }

  async ackStopRequests(req: AckRequestsRequest): Promise<void> {
    await this.ackRequests('stop_requests', undefined, req);
  }

  private async takeStartRows(kind: 'lrp' | 'task', req: TakeRequestsRequest) {
    validateTake(req);
    return this.mutate('takeStartRequests', async (tx) => {
      let query = tx.db
        .selectFrom('start_requests')
        .selectAll()
        .where('kind', '=', kind)
        .where('available_at', '<=', tx.now)
        .orderBy('id')
        .limit(req.limit);
      // Several auctioneers may take at once: each skips the rows another is taking.
      if (this.backend.lockRows) query = query.forUpdate().skipLocked();
      const rows = await query.execute();
      await this.hide(tx, 'start_requests', rows, req.visibility_ms);
      return rows;
    });
  }

  private async takeStopRows(req: TakeStopRequestsRequest) {
    validateTake(req);
    return this.mutate('takeStopRequests', async (tx) => {
      let query = tx.db
        .selectFrom('stop_requests')
        .selectAll()
        .where('available_at', '<=', tx.now)
        .orderBy('id')
        .limit(req.limit);
      if (req.cell_id !== undefined) query = query.where('cell_id', '=', req.cell_id);
      if (this.backend.lockRows) query = query.forUpdate().skipLocked();
      const rows = await query.execute();
      await this.hide(tx, 'stop_requests', rows, req.visibility_ms);
      return rows;
    });
  }

  /** A taken request comes back after `visibility_ms` unless acknowledged: at-least-once delivery. */
  private async hide(
    tx: Tx,
    table: 'start_requests' | 'stop_requests',
    rows: ReadonlyArray<{ id: number | string }>,
    visibilityMs: number,
  ): Promise<void> {
    if (rows.length === 0) return;
    await tx.db
      .updateTable(table)
      .set({ available_at: new Date(tx.nowMs + visibilityMs).toISOString() })
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
  }

  private async ackRequests(
    table: 'start_requests' | 'stop_requests',
    kind: string | undefined,
    req: AckRequestsRequest,
  ): Promise<void> {
    if (req.ids.length === 0) return;
    await this.mutate(`ack ${table}`, async (tx) => {
      for (let i = 0; i < req.ids.length; i += insertChunk) {
        let query = tx.db.deleteFrom(table).where('id', 'in', req.ids.slice(i, i + insertChunk));
        if (kind !== undefined) query = query.where('kind', '=', kind);
        await query.execute();
      }
    });
  }

  // ---------------------------------------------------------------- tasks

  async desireTask(given: Parameters<BbsStore['desireTask']>[0]): Promise<Task> {
    const req = taskWithDefaults(given);
    if (!req.task_guid) throw new InvalidArgumentError('task_guid must not be empty', { field: 'task_guid' });
    return this.mutate('desireTask', async (tx) => {
      const existing = await this.loadTask(tx.db, req.task_guid, true);
      if (existing) {
        throw new BerthError('already_exists', `Cannot desire task "${req.task_guid}": it already exists`, {
          kind: 'Task',
          id: req.task_guid,
          current: existing,
        });
      }
      const task: Task = {
        ...stripUndefined(req),
        state: 'PENDING',
        cell_id: '',
        result: '',
        failed: false,
        failure_reason: '',
        created_at: tx.now,
        updated_at: tx.now,
        first_completed_at: null,
        modification_tag: { epoch: randomUUID(), index: 0 },
      };
      await tx.db.insertInto('tasks').values(taskToRow(task)).execute();
      const payload = {
        memory_mb: task.memory_mb,
        disk_mb: task.disk_mb,
        placement_tags: task.placement_tags,
      };
      await tx.db
        .insertInto('start_requests')
        .values({
          kind: 'task',
          guid: task.task_guid,
          idx: 0,
          domain: task.domain,
          payload: JSON.stringify(payload),
          available_at: tx.now,
          created_at: tx.now,
        })
        .execute();
      tx.events.push({ type: 'task_created', task });
      return task;
    });
  }

  async getTask(req: TaskGuidRequest): Promise<Task> {
    const task = await this.loadTask(this.backend.db, req.task_guid, false);
    if (!task) throw new NotFoundError('Task', req.task_guid);
    return task;
  }

  async listTasks(req: TaskFilter = {}): Promise<Task[]> {
    validatePage(req);
    let query = this.backend.db.selectFrom('tasks').selectAll().orderBy('task_guid');
    if (req.domain !== undefined) query = query.where('domain', '=', req.domain);
    if (req.cell_id !== undefined) query = query.where('cell_id', '=', req.cell_id);
    if (req.state !== undefined) query = query.where('state', '=', req.state);
    if (req.after !== undefined) query = query.where('task_guid', '>', req.after);
    if (req.limit !== undefined) query = query.limit(req.limit);
    return (await query.execute()).map(rowToTask);
  }

  async startTask(req: StartTaskRequest): Promise<Task> {
    return this.mutate('startTask', async (tx) => {
      const before = await this.requireTask(tx, req.task_guid, req.expected);
      assertTaskTransition(before.state, 'RUNNING', req.task_guid);
      return this.replaceTask(tx, before, { ...before, state: 'RUNNING', cell_id: req.cell_id });
    });
  }

  async completeTask(req: CompleteTaskRequest): Promise<Task> {
    return this.mutate('completeTask', async (tx) => {
      const before = await this.requireTask(tx, req.task_guid, req.expected);
      assertTaskTransition(before.state, 'COMPLETED', req.task_guid);
      if (before.state !== 'RUNNING' || before.cell_id !== req.cell_id) {
        throw new BerthError(
          'conflict',
          `Cannot complete task "${req.task_guid}" from cell "${req.cell_id}": it is ${before.state}${before.cell_id ? ` on cell "${before.cell_id}"` : ''}`,
          { kind: 'Task', id: req.task_guid, current: before },
        );
      }
      return this.replaceTask(tx, before, {
        ...before,
        state: 'COMPLETED',
        failed: req.failed,
        failure_reason: req.failed ? req.failure_reason : '',
        result: req.failed ? '' : req.result,
        first_completed_at: before.first_completed_at ?? tx.now,
      });
    });
  }

  async failTask(req: FailTaskRequest): Promise<Task> {
    return this.mutate('failTask', async (tx) => {
      const before = await this.requireTask(tx, req.task_guid, req.expected);
      return this.completeAsFailed(tx, before, req.failure_reason);
    });
  }

  async cancelTask(req: CancelTaskRequest): Promise<Task> {
    return this.mutate('cancelTask', async (tx) => {
      const before = await this.requireTask(tx, req.task_guid, req.expected);
      const after = await this.completeAsFailed(tx, before, 'task was cancelled');
      if (before.state === 'RUNNING') {
        await this.recordStop(tx, 'task', {
          process_guid: before.task_guid,
          index: 0,
          instance_guid: before.task_guid,
          cell_id: before.cell_id,
        });
      }
      return after;
    });
  }

  async resolvingTask(req: CasTaskRequest): Promise<Task> {
    return this.mutate('resolvingTask', async (tx) => {
      const before = await this.requireTask(tx, req.task_guid, req.expected);
      assertTaskTransition(before.state, 'RESOLVING', req.task_guid);
      return this.replaceTask(tx, before, { ...before, state: 'RESOLVING' });
    });
  }

  async demoteResolvingTask(req: CasTaskRequest): Promise<Task> {
    return this.mutate('demoteResolvingTask', async (tx) => {
      const before = await this.requireTask(tx, req.task_guid, req.expected);
      if (before.state !== 'RESOLVING') {
        throw new BerthError(
          'conflict',
          `Cannot demote task "${req.task_guid}": current state is ${before.state}, not RESOLVING`,
          { kind: 'Task', id: req.task_guid, current: before },
        );
      }
      return this.replaceTask(tx, before, { ...before, state: 'COMPLETED' });
    });
  }

  async deleteTask(req: CasTaskRequest): Promise<void> {
    await this.mutate('deleteTask', async (tx) => {
      const before = await this.requireTask(tx, req.task_guid, req.expected);
      if (!taskDeletableStates.includes(before.state)) {
        throw new BerthError(
          'illegal_transition',
          `Cannot delete task "${req.task_guid}": current state is ${before.state}, only COMPLETED or RESOLVING tasks are deleted`,
          { machine: 'Task', from: before.state, to: 'DELETED', subject: req.task_guid },
        );
      }
      const result = await tx.db
        .deleteFrom('tasks')
        .where('task_guid', '=', before.task_guid)
        .where('tag_epoch', '=', before.modification_tag.epoch)
        .where('tag_index', '=', before.modification_tag.index)
        .executeTakeFirst();
      if (result.numDeletedRows !== 1n) await this.taskConflict(tx, before.task_guid, req.expected);
      tx.events.push({ type: 'task_removed', task: before });
    });
  }

  private async completeAsFailed(tx: Tx, before: Task, reason: string): Promise<Task> {
    assertTaskTransition(before.state, 'COMPLETED', before.task_guid);
    if (before.state === 'RESOLVING') {
      throw new BerthError(
        'conflict',
        `Cannot fail task "${before.task_guid}": it already completed and is being resolved`,
        { kind: 'Task', id: before.task_guid, current: before },
      );
    }
    if (before.state === 'PENDING') {
      await tx.db
        .deleteFrom('start_requests')
        .where('kind', '=', 'task')
        .where('guid', '=', before.task_guid)
        .execute();
    }
    return this.replaceTask(tx, before, {
      ...before,
      state: 'COMPLETED',
      failed: true,
      failure_reason: reason,
      result: '',
      first_completed_at: before.first_completed_at ?? tx.now,
    });
  }

  // ---------------------------------------------------------------- domains, cells, leases

  async upsertDomain(req: UpsertDomainRequest): Promise<Domain> {
    if (!req.domain) throw new InvalidArgumentError('domain must not be empty', { field: 'domain' });
    return this.mutate('upsertDomain', async (tx) => {
      // ttl 0 = fresh until the end of time (Diego's "no TTL").
      const fresh_until =
        req.ttl_ms > 0 ? new Date(tx.nowMs + req.ttl_ms).toISOString() : '9999-12-31T23:59:59.999Z';
      await tx.db
        .insertInto('domains')
        .values({ domain: req.domain, fresh_until })
        .onConflict((oc) => oc.column('domain').doUpdateSet({ fresh_until }))
        .execute();
      return { domain: req.domain, fresh_until };
    });
  }

  async listDomains(): Promise<Domain[]> {
    return listFreshDomains(this.backend.db, this.#now().toISOString());
  }

  async heartbeatCell(req: HeartbeatCellRequest): Promise<CellPresence> {
    if (!req.presence.cell_id)
      throw new InvalidArgumentError('cell_id must not be empty', { field: 'cell_id' });
    return this.mutate('heartbeatCell', async (tx) => {
      const presence: CellPresence = {
        ...req.presence,
        expires_at: new Date(tx.nowMs + req.ttl_ms).toISOString(),
      };
      const row = {
        zone: presence.zone,
        capacity: JSON.stringify(presence.capacity),
        rep_url: presence.rep_url,
        placement_tags: JSON.stringify(presence.placement_tags),
        expires_at: presence.expires_at,
        model_agent: presence.model_agent === true ? 1 : 0,
        rep_token: presence.rep_token ?? '',
      };
      await tx.db
        .insertInto('cells')
        .values({ cell_id: presence.cell_id, ...row })
        .onConflict((oc) => oc.column('cell_id').doUpdateSet(row))
        .execute();
      return presence;
    });
  }

  async listCells(): Promise<CellPresence[]> {
    return listLiveCells(this.backend.db, this.#now().toISOString());
  }

  async removeCell(req: CellIdRequest): Promise<void> {
    await this.mutate('removeCell', async (tx) => {
      await tx.db.deleteFrom('cells').where('cell_id', '=', req.cell_id).execute();
    });
  }

  async acquireLease(req: AcquireLeaseRequest): Promise<LeaseResult> {
    if (!req.holder) throw new InvalidArgumentError('holder must not be empty', { field: 'holder' });
    return this.mutate('acquireLease', async (tx) => {
      // Create the row first so that two servers racing for a new lease both end up locking it.
      await tx.db
        .insertInto('leases')
        .values({ name: req.name, holder: '', token: 0, expires_at: '' })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
      let query = tx.db.selectFrom('leases').selectAll().where('name', '=', req.name);
      if (this.backend.lockRows) query = query.forUpdate();
      const current = await query.executeTakeFirstOrThrow();
      const lease: Lease = { ...current, token: Number(current.token) };
      if (lease.holder !== req.holder && lease.expires_at > tx.now) return { acquired: false, lease };
      const next: Lease = {
        name: req.name,
        holder: req.holder,
        // The token changes only on a handover, so a deposed holder's token is always stale.
        token: lease.holder === req.holder ? lease.token : lease.token + 1,
        expires_at: new Date(tx.nowMs + req.ttl_ms).toISOString(),
      };
      await tx.db
        .updateTable('leases')
        .set({ holder: next.holder, token: next.token, expires_at: next.expires_at })
        .where('name', '=', req.name)
        .execute();
      return { acquired: true, lease: next };
    });
  }

  async releaseLease(req: ReleaseLeaseRequest): Promise<void> {
    await this.mutate('releaseLease', async (tx) => {
      await tx.db
        .updateTable('leases')
        .set({ expires_at: tx.now })
        .where('name', '=', req.name)
        .where('holder', '=', req.holder)
        .execute();
    });
  }

  async listLeases(): Promise<Lease[]> {
    const rows = await this.backend.db.selectFrom('leases').selectAll().orderBy('name').execute();
    return rows.filter((r) => r.holder !== '').map((r) => ({ ...r, token: Number(r.token) }));
  }

  // ---------------------------------------------------------------- reads

  async readSnapshot(): Promise<BbsSnapshot> {
    return this.#snapshot(readAllActual);
  }

  async readConvergenceSnapshot(): Promise<ConvergenceSnapshot> {
    return this.#snapshot(readConvergenceActuals);
  }

  async #snapshot<A>(
    readActuals: (query: RowQuery) => Promise<A[]>,
  ): Promise<Omit<BbsSnapshot, 'actual_lrps'> & { actual_lrps: A[] }> {
    const now = this.#now().toISOString();
    return this.backend.readRows(async (query) => ({
      desired_lrps: await readAllDesired(query),
      actual_lrps: await readActuals(query),
      domains: await query(
        'SELECT domain, fresh_until FROM domains WHERE fresh_until > ? ORDER BY domain',
        [now],
        (r) => ({
          domain: r[0] as string,
          fresh_until: r[1] as string,
        }),
      ),
      cells: await query(
        'SELECT cell_id, zone, capacity, rep_url, placement_tags, expires_at, rep_token FROM cells WHERE expires_at > ? ORDER BY cell_id',
        [now],
        arrayToCell,
      ),
      now,
    }));
  }

  async readEvents(req: ReadEventsRequest): Promise<BbsEvent[]> {
    const [afterTxid, afterId] = parseEventCursor(req.after);
    const limit = Math.min(Math.max(1, req.limit ?? 1000), maxEventsPerRead);
    const rows = await this.backend.read((db) => this.backend.readEvents(db, afterTxid, afterId, limit));
    return rows.map((row) => {
      const data = JSON.parse(row.data) as Record<string, unknown>;
      return { ...data, id: `${row.txid}-${row.id}`, type: row.type, created_at: row.created_at } as BbsEvent;
    });
  }

  async pruneEvents(req: PruneEventsRequest): Promise<number> {
    return this.mutate('pruneEvents', async (tx) => {
      // Ids grow with time, so the first event young enough to keep bounds what goes; no index on
      // created_at is needed (one fewer index to update on every write).
      const firstKept = await tx.db
        .selectFrom('events')
        .select('id')
        .where('created_at', '>=', req.before)
        .orderBy('id')
        .limit(1)
        .executeTakeFirst();
      let query = tx.db.deleteFrom('events');
      if (firstKept) query = query.where('id', '<', firstKept.id);
      const result = await query.executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }

  async countRecords(): Promise<RecordCounts> {
    return this.backend.read(async (db) => {
      const count = (table: 'desired_lrps' | 'cells' | 'start_requests' | 'stop_requests') =>
        db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number | string>().as('n'))
          .executeTakeFirstOrThrow()
          .then((r) => Number(r.n));
      const actualRows = await db
        .selectFrom('actual_lrps')
        .select(['state', 'evacuating', (eb) => eb.fn.countAll<number | string>().as('n')])
        .groupBy(['state', 'evacuating'])
        .execute();
      const actual = Object.fromEntries(actualLrpStates.map((s) => [s, 0])) as Record<ActualLRPState, number>;
      let evacuating = 0;
      for (const row of actualRows) {
        if (row.evacuating === 1) evacuating += Number(row.n);
        else actual[row.state as ActualLRPState] += Number(row.n);
      }
      const taskRows = await db
        .selectFrom('tasks')
        .select(['state', (eb) => eb.fn.countAll<number | string>().as('n')])
        .groupBy('state')
        .execute();
      const tasks = Object.fromEntries(taskStates.map((s) => [s, 0])) as Record<TaskState, number>;
      for (const row of taskRows) tasks[row.state as TaskState] += Number(row.n);
      return {
        desired_lrps: await count('desired_lrps'),
        actual_lrps: actual,
        evacuating_actual_lrps: evacuating,
        tasks,
        cells: await count('cells'),
        start_requests: await count('start_requests'),
        stop_requests: await count('stop_requests'),
      };
    });
  }

  // ---------------------------------------------------------------- record helpers

  private async loadDesired(db: Db, processGuid: string, lock: boolean): Promise<DesiredLRP | undefined> {
    let query = db.selectFrom('desired_lrps').selectAll().where('process_guid', '=', processGuid);
    if (lock && this.backend.lockRows) query = query.forUpdate();
    const row = await query.executeTakeFirst();
    return row ? rowToDesired(row) : undefined;
  }

  private async requireDesired(
    tx: Tx,
    processGuid: string,
    expected: ModificationTag | undefined,
  ): Promise<DesiredLRP> {
    const current = await this.loadDesired(tx.db, processGuid, true);
    if (!current) throw new NotFoundError('DesiredLRP', processGuid);
    if (expected && !tagsEqual(current.modification_tag, expected)) {
      throw new CasConflictError('DesiredLRP', processGuid, expected, current);
    }
    return current;
  }

  private async desiredConflict(
    tx: Tx,
    processGuid: string,
    expected: ModificationTag | null,
  ): Promise<never> {
    const current = await this.loadDesired(tx.db, processGuid, false);
    if (!current) throw new NotFoundError('DesiredLRP', processGuid);
    throw new CasConflictError('DesiredLRP', processGuid, expected, current);
  }

  private async loadActual(db: Db, ref: ActualLRPRef, evacuating: boolean, lock: boolean) {
    const text = lock ? this.#sql.selectActualForUpdate : this.#sql.selectActual;
    const result = await db.executeQuery<ActualLrpRow>(
      CompiledQuery.raw(text, [ref.process_guid, ref.index, evacuating ? 1 : 0]),
    );
    const row = result.rows[0];
    return row ? rowToActual(row) : undefined;
  }

  private async loadActualsOf(db: Db, processGuid: string, lock: boolean): Promise<ActualLRP[]> {
    let query = db
      .selectFrom('actual_lrps')
      .selectAll()
      .where('process_guid', '=', processGuid)
      .orderBy('idx')
      .orderBy('evacuating');
    if (lock && this.backend.lockRows) query = query.forUpdate();
    return (await query.execute()).map(rowToActual);
  }

  private async requireActual(tx: Tx, ref: ActualLRPRef, expected: ModificationTag): Promise<ActualLRP> {
    const current = await this.loadActual(tx.db, ref, false, true);
    if (!current) throw new NotFoundError('ActualLRP', refName(ref));
    if (!tagsEqual(current.modification_tag, expected)) {
      throw new CasConflictError('ActualLRP', refName(ref), expected, current);
    }
    return current;
  }

  private async domainFor(tx: Tx, req: ActualLRPRef & { readonly domain?: string }): Promise<string> {
    if (req.domain) return req.domain;
    const desired = await this.loadDesired(tx.db, req.process_guid, false);
    if (desired) return desired.domain;
    throw new InvalidArgumentError(
      `Cannot create ActualLRP ${refName(req)}: give its domain (no DesiredLRP "${req.process_guid}" to take it from)`,
      { field: 'domain' },
    );
  }

  private async createActual(tx: Tx, lrp: ActualLRP): Promise<ActualLRP> {
    const existing = await this.loadActual(tx.db, lrp, lrp.evacuating, true);
    if (existing) throw new CasConflictError('ActualLRP', refName(lrp), null, existing);
    try {
      await tx.db.insertInto('actual_lrps').values(actualToRow(lrp)).execute();
    } catch (err) {
      if (!this.backend.isUniqueViolation(err)) throw err;
      const current = await this.loadActual(tx.db, lrp, lrp.evacuating, false);
      throw new CasConflictError('ActualLRP', refName(lrp), null, current ?? null);
    }
    tx.events.push({ type: 'actual_lrp_created', actual_lrp: lrp });
    return lrp;
  }

  /** The conditional UPDATE is the CAS itself; the read before it only decided what to write. */
  private async replaceActual(tx: Tx, before: ActualLRP, changes: ActualLRP): Promise<ActualLRP> {
    const after: ActualLRP = {
      ...changes,
      modification_tag:
        changes.modification_tag === before.modification_tag
          ? nextTag(before.modification_tag)
          : changes.modification_tag,
    };
    const r = actualToRow(after);
    const result = await tx.db.executeQuery(
      CompiledQuery.raw(this.#sql.updateActual, [
        r.domain,
        r.instance_guid,
        r.cell_id,
        r.state,
        r.crash_count,
        r.last_crashed_at,
        r.crash_reason,
        r.since,
        r.placement_error,
        r.address,
        r.ports,
        r.tag_epoch,
        r.tag_index,
        r.process_guid,
        r.idx,
        r.evacuating,
        before.modification_tag.epoch,
        before.modification_tag.index,
      ]),
    );
    if (result.numAffectedRows !== 1n) {
      const current = await this.loadActual(tx.db, before, before.evacuating, false);
      if (!current) throw new NotFoundError('ActualLRP', refName(before));
      throw new CasConflictError('ActualLRP', refName(before), before.modification_tag, current);
    }
    tx.events.push({ type: 'actual_lrp_changed', before, after });
    return after;
  }

  private async deleteActual(tx: Tx, lrp: ActualLRP): Promise<void> {
    const result = await tx.db
      .deleteFrom('actual_lrps')
      .where('process_guid', '=', lrp.process_guid)
      .where('idx', '=', lrp.index)
      .where('evacuating', '=', lrp.evacuating ? 1 : 0)
      .where('tag_epoch', '=', lrp.modification_tag.epoch)
      .where('tag_index', '=', lrp.modification_tag.index)
      .executeTakeFirst();
    if (result.numDeletedRows !== 1n) {
      const current = await this.loadActual(tx.db, lrp, lrp.evacuating, false);
      if (!current) throw new NotFoundError('ActualLRP', refName(lrp));
      throw new CasConflictError('ActualLRP', refName(lrp), lrp.modification_tag, current);
    }
    tx.events.push({ type: 'actual_lrp_removed', actual_lrp: lrp });
  }

  private async retire(tx: Tx, lrp: ActualLRP): Promise<RetireActualLRPResult> {
    if (lrp.state === 'UNCLAIMED' || lrp.state === 'CRASHED') {
      await this.deleteActual(tx, lrp);
      await tx.db
        .deleteFrom('start_requests')
        .where('kind', '=', 'lrp')
        .where('guid', '=', lrp.process_guid)
        .where('idx', '=', lrp.index)
        .execute();
      return { removed: true, stop_request: null };
    }
    const stop: LRPStopRequest = {
      process_guid: lrp.process_guid,
      index: lrp.index,
      instance_guid: lrp.instance_guid,
      cell_id: lrp.cell_id,
    };
    await this.recordStop(tx, 'lrp', stop);
    return { removed: false, stop_request: stop };
  }

  private async recordStop(tx: Tx, kind: 'lrp' | 'task', stop: LRPStopRequest): Promise<void> {
    await tx.db
      .insertInto('stop_requests')
      .values({
        kind,
        guid: stop.process_guid,
        idx: stop.index,
        instance_guid: stop.instance_guid,
        cell_id: stop.cell_id,
        available_at: tx.now,
        created_at: tx.now,
      })
      .execute();
  }

  private async recordStartRequests(tx: Tx, desired: DesiredLRP, indices: readonly number[]): Promise<void> {
    const payload = JSON.stringify({
      memory_mb: desired.memory_mb,
      disk_mb: desired.disk_mb,
      placement_tags: desired.placement_tags,
    });
    for (let i = 0; i < indices.length; i += insertChunk) {
      await tx.db
        .insertInto('start_requests')
        .values(
          indices.slice(i, i + insertChunk).map((index) => ({
            kind: 'lrp',
            guid: desired.process_guid,
            idx: index,
            domain: desired.domain,
            payload,
            available_at: tx.now,
            created_at: tx.now,
          })),
        )
        .execute();
    }
  }

  /** An instance nobody desires any more is not auctioned; the converger will remove it. */
  private async requestStartIfDesired(tx: Tx, lrp: ActualLRP): Promise<void> {
    const desired = await this.loadDesired(tx.db, lrp.process_guid, false);
    if (desired && lrp.index < desired.instances) await this.recordStartRequests(tx, desired, [lrp.index]);
  }

  private async loadTask(db: Db, taskGuid: string, lock: boolean): Promise<Task | undefined> {
    let query = db.selectFrom('tasks').selectAll().where('task_guid', '=', taskGuid);
    if (lock && this.backend.lockRows) query = query.forUpdate();
    const row = await query.executeTakeFirst();
    return row ? rowToTask(row) : undefined;
  }

  private async requireTask(tx: Tx, taskGuid: string, expected: ModificationTag | undefined): Promise<Task> {
    const current = await this.loadTask(tx.db, taskGuid, true);
    if (!current) throw new NotFoundError('Task', taskGuid);
    if (expected && !tagsEqual(current.modification_tag, expected)) {
      throw new CasConflictError('Task', taskGuid, expected, current);
    }
    return current;
  }

  private async taskConflict(tx: Tx, taskGuid: string, expected: ModificationTag): Promise<never> {
    const current = await this.loadTask(tx.db, taskGuid, false);
    if (!current) throw new NotFoundError('Task', taskGuid);
    throw new CasConflictError('Task', taskGuid, expected, current);
  }

  private async replaceTask(tx: Tx, before: Task, changes: Task): Promise<Task> {
    const after: Task = {
      ...changes,
      updated_at: tx.now,
      modification_tag: nextTag(before.modification_tag),
    };
    const { task_guid, ...row } = taskToRow(after);
    const result = await tx.db
      .updateTable('tasks')
      .set(row)
      .where('task_guid', '=', task_guid)
      .where('tag_epoch', '=', before.modification_tag.epoch)
      .where('tag_index', '=', before.modification_tag.index)
      .executeTakeFirst();
    if (result.numUpdatedRows !== 1n) await this.taskConflict(tx, task_guid, before.modification_tag);
    tx.events.push({ type: 'task_changed', before, after });
    return after;
  }
}

// ------------------------------------------------------------------ shared reads

async function listDesired(db: Db, filter: DesiredLRPFilter): Promise<DesiredLRP[]> {
  let query = db.selectFrom('desired_lrps').selectAll().orderBy('process_guid');
  if (filter.domain !== undefined) query = query.where('domain', '=', filter.domain);
  if (filter.after !== undefined) query = query.where('process_guid', '>', filter.after);
  if (filter.limit !== undefined) query = query.limit(filter.limit);
  return (await query.execute()).map(rowToDesired);
}

/** A page size is a positive integer: anything else would read everything or nothing. */
function validatePage(page: ListPage<unknown>): void {
  if (page.limit !== undefined && !(Number.isSafeInteger(page.limit) && page.limit >= 1)) {
    throw new InvalidArgumentError(`Invalid limit ${String(page.limit)}: expected a positive integer`, {
      field: 'limit',
    });
  }
}

async function listActual(db: Db, filter: ActualLRPFilter): Promise<ActualLRP[]> {
  let query = db.selectFrom('actual_lrps').selectAll();
  if (filter.process_guid !== undefined) query = query.where('process_guid', '=', filter.process_guid);
  if (filter.domain !== undefined) query = query.where('domain', '=', filter.domain);
  if (filter.cell_id !== undefined) query = query.where('cell_id', '=', filter.cell_id);
  const after = filter.after;
  if (after !== undefined) {
    // Keyset: strictly after (process_guid, idx, evacuating), the primary key's order. A row-value
    // comparison, which both databases answer with a seek on the key (an OR of the three cases
    // makes SQLite scan the table from its start on every page).
    query = query.where((eb) =>
      eb(
        eb.refTuple('process_guid', 'idx', 'evacuating'),
        '>',
        eb.tuple(after.process_guid, after.index, after.evacuating ? 1 : 0),
      ),
    );
  }
  if (filter.limit !== undefined) query = query.limit(filter.limit);
  const rows = await query.orderBy('process_guid').orderBy('idx').orderBy('evacuating').execute();
  return rows.map(rowToActual);
}

async function listFreshDomains(db: Db, now: string): Promise<Domain[]> {
  return db.selectFrom('domains').selectAll().where('fresh_until', '>', now).orderBy('domain').execute();
}

async function listLiveCells(db: Db, now: string): Promise<CellPresence[]> {
  const rows = await db
    .selectFrom('cells')
    .selectAll()
    .where('expires_at', '>', now)
    .orderBy('cell_id')
    .execute();
  return rows.map((r) => ({
    cell_id: r.cell_id,
    zone: r.zone,
    capacity: JSON.parse(r.capacity) as CellPresence['capacity'],
    rep_url: r.rep_url,
    placement_tags: JSON.parse(r.placement_tags) as string[],
    model_agent: r.model_agent === 1,
    expires_at: r.expires_at,
    ...(r.rep_token ? { rep_token: r.rep_token } : {}),
  }));
}

// ------------------------------------------------------------------ full reads (positional rows)

const desiredColumns =
  'process_guid, domain, instances, definition, routes, annotation, created_at, tag_epoch, tag_index';

async function readAllDesired(query: RowQuery): Promise<DesiredLRP[]> {
  return query(`SELECT ${desiredColumns} FROM desired_lrps ORDER BY process_guid`, [], (r) =>
    rowToDesired({
      process_guid: r[0] as string,
      domain: r[1] as string,
      instances: Number(r[2]),
      definition: r[3] as string,
      routes: r[4] as string,
      annotation: r[5] as string,
      created_at: r[6] as string,
      tag_epoch: r[7] as string,
      tag_index: Number(r[8]),
    }),
  );
}

async function readAllActual(query: RowQuery): Promise<ActualLRP[]> {
  return query(
    `SELECT ${actualColumns} FROM actual_lrps ORDER BY process_guid, idx, evacuating`,
    [],
    arrayToActual,
  );
}

const convergenceActualColumns =
  'process_guid, idx, evacuating, domain, instance_guid, cell_id, state, crash_count, last_crashed_at, since, tag_epoch, tag_index';

/**
 * The converger's projection. Its own object literal rather than `arrayToActual` minus fields: the
 * hot read builds each of 250,000 objects once, in one hidden class.
 */
async function readConvergenceActuals(query: RowQuery): Promise<ConvergenceActualLRP[]> {
  return query(
    `SELECT ${convergenceActualColumns} FROM actual_lrps ORDER BY process_guid, idx, evacuating`,
    [],
    (r) => ({
      process_guid: r[0] as string,
      index: r[1] as number,
      domain: r[3] as string,
      instance_guid: r[4] as string,
      cell_id: r[5] as string,
      state: r[6] as ActualLRPState,
      crash_count: r[7] as number,
      last_crashed_at: r[8] as string | null,
      since: r[9] as string,
      evacuating: r[2] === 1,
      modification_tag: { epoch: r[10] as string, index: r[11] as number },
    }),
  );
}

/** Column order of `actualColumns`; one object literal so every ActualLRP shares a hidden class. */
function arrayToActual(r: unknown[]): ActualLRP {
  const ports = r[13] as string;
  return {
    process_guid: r[0] as string,
    index: r[1] as number,
    domain: r[3] as string,
    instance_guid: r[4] as string,
    cell_id: r[5] as string,
    state: r[6] as ActualLRPState,
    crash_count: r[7] as number,
    last_crashed_at: r[8] as string | null,
    crash_reason: r[9] as string,
    since: r[10] as string,
    placement_error: r[11] as string,
    address: r[12] as string,
    ports: ports === '[]' ? [] : (JSON.parse(ports) as PortMapping[]),
    evacuating: r[2] === 1,
    modification_tag: { epoch: r[14] as string, index: r[15] as number },
  };
}

function arrayToCell(r: unknown[]): CellPresence {
  return {
    cell_id: r[0] as string,
    zone: r[1] as string,
    capacity: JSON.parse(r[2] as string) as CellPresence['capacity'],
    rep_url: r[3] as string,
    placement_tags: JSON.parse(r[4] as string) as string[],
    expires_at: r[5] as string,
    ...(r[6] ? { rep_token: r[6] as string } : {}),
  };
}

// ------------------------------------------------------------------ row mapping

function desiredToRow(d: DesiredLRP): DesiredLrpRow {
  const { process_guid, domain, instances, routes, annotation, created_at, modification_tag, ...definition } =
    d;
  return {
    process_guid,
    domain,
    instances,
    definition: JSON.stringify(definition),
    routes: JSON.stringify(routes),
    annotation,
    created_at,
    tag_epoch: modification_tag.epoch,
    tag_index: modification_tag.index,
  };
}

function rowToDesired(r: DesiredLrpRow): DesiredLRP {
  const definition = JSON.parse(r.definition) as Omit<
    DesiredLRP,
    'process_guid' | 'domain' | 'instances' | 'routes' | 'annotation' | 'created_at' | 'modification_tag'
  >;
  return {
    process_guid: r.process_guid,
    domain: r.domain,
    instances: r.instances,
    ...definition,
    routes: JSON.parse(r.routes) as Record<string, unknown>,
    annotation: r.annotation,
    created_at: r.created_at,
    modification_tag: { epoch: r.tag_epoch, index: Number(r.tag_index) },
  };
}

function actualToRow(a: ActualLRP): ActualLrpRow {
  return {
    process_guid: a.process_guid,
    idx: a.index,
    evacuating: a.evacuating ? 1 : 0,
    domain: a.domain,
    instance_guid: a.instance_guid,
    cell_id: a.cell_id,
    state: a.state,
    crash_count: a.crash_count,
    last_crashed_at: a.last_crashed_at,
    crash_reason: a.crash_reason,
    since: a.since,
    placement_error: a.placement_error,
    address: a.address,
    ports: a.ports.length === 0 ? '[]' : JSON.stringify(a.ports),
    tag_epoch: a.modification_tag.epoch,
    tag_index: a.modification_tag.index,
  };
}

/** The hot path of the convergence read (250,000 rows): no work beyond building the object. */
function rowToActual(r: ActualLrpRow): ActualLRP {
  return {
    process_guid: r.process_guid,
    index: r.idx,
    domain: r.domain,
    instance_guid: r.instance_guid,
    cell_id: r.cell_id,
    state: r.state as ActualLRPState,
    crash_count: r.crash_count,
    last_crashed_at: r.last_crashed_at,
    crash_reason: r.crash_reason,
    since: r.since,
    placement_error: r.placement_error,
    address: r.address,
    ports: r.ports === '[]' ? [] : (JSON.parse(r.ports) as PortMapping[]),
    evacuating: r.evacuating === 1,
    modification_tag: { epoch: r.tag_epoch, index: r.tag_index },
  };
}

function taskToRow(t: Task): TaskRow {
  const {
    task_guid,
    domain,
    state,
    cell_id,
    result,
    failed,
    failure_reason,
    created_at,
    updated_at,
    first_completed_at,
    modification_tag,
    ...definition
  } = t;
  return {
    task_guid,
    domain,
    state,
    cell_id,
    definition: JSON.stringify(definition),
    result,
    failed: failed ? 1 : 0,
    failure_reason,
    created_at,
    updated_at,
    first_completed_at,
    tag_epoch: modification_tag.epoch,
    tag_index: modification_tag.index,
  };
}

function rowToTask(r: TaskRow): Task {
  const definition = JSON.parse(r.definition) as Omit<Task, 'task_guid' | 'domain'>;
  return {
    task_guid: r.task_guid,
    domain: r.domain,
    ...definition,
    state: r.state as TaskState,
    cell_id: r.cell_id,
    result: r.result,
    failed: r.failed === 1,
    failure_reason: r.failure_reason,
    created_at: r.created_at,
    updated_at: r.updated_at,
    first_completed_at: r.first_completed_at,
    modification_tag: { epoch: r.tag_epoch, index: Number(r.tag_index) },
  };
}

// ------------------------------------------------------------------ small helpers

function newUnclaimed(processGuid: string, index: number, domain: string, now: string): ActualLRP {
  return {
    process_guid: processGuid,
    index,
    domain,
    instance_guid: '',
    cell_id: '',
    state: 'UNCLAIMED',
    crash_count: 0,
    last_crashed_at: null,
    crash_reason: '',
    since: now,
    placement_error: '',
    address: '',
    ports: [],
    evacuating: false,
    modification_tag: { epoch: randomUUID(), index: 0 },
  };
}

function nextTag(tag: ModificationTag): ModificationTag {
  return { epoch: tag.epoch, index: tag.index + 1 };
}

function refName(ref: ActualLRPRef): string {
  return `${ref.process_guid}/${ref.index}`;
}

function assertOwner(lrp: ActualLRP, key: ActualLRPInstanceKey, action: string): void {
  if (lrp.cell_id !== key.cell_id || lrp.instance_guid !== key.instance_guid) {
    throw new BerthError(
      'conflict',
      `Cannot ${action} ActualLRP ${refName(lrp)} as instance ${key.instance_guid} on cell "${key.cell_id}": it is ${lrp.state}${lrp.cell_id ? ` as instance ${lrp.instance_guid} on cell "${lrp.cell_id}"` : ''}`,
      { kind: 'ActualLRP', id: refName(lrp), current: lrp },
    );
  }
}

function validateDesired(req: DesiredLRPDefinition): void {
  if (!req.process_guid)
    throw new InvalidArgumentError('process_guid must not be empty', { field: 'process_guid' });
  if (!req.domain) throw new InvalidArgumentError('domain must not be empty', { field: 'domain' });
  if (!req.image) throw new InvalidArgumentError('image must not be empty', { field: 'image' });
  validateInstances(req.instances);
}

function validateTake(req: TakeRequestsRequest): void {
  if (!Number.isInteger(req.limit) || req.limit < 1) {
    throw new InvalidArgumentError('limit must be a positive integer', { field: 'limit' });
  }
  if (!Number.isFinite(req.visibility_ms) || req.visibility_ms < 0) {
    throw new InvalidArgumentError('visibility_ms must be a non-negative number', { field: 'visibility_ms' });
  }
}

/** `exactOptionalPropertyTypes`: a present-but-undefined field must not reach the stored JSON. */
function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function parseEventCursor(after: string | undefined): [number, number] {
  if (after === undefined || after === '') return [-1, 0];
  // Ids are safe integers (and PostgreSQL BIGINTs): a longer run of digits is no event's id.
  const match = /^(\d{1,15})-(\d{1,15})$/.exec(after);
  if (!match) {
    throw new InvalidArgumentError(`Invalid after "${after}": expected the id of an event`, {
      field: 'after',
    });
  }
  return [Number(match[1]), Number(match[2])];
}
