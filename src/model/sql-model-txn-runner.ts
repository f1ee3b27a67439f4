import { sql } from 'kysely';
import { BerthError } from '../core/index.js';
import { insertEvents, runMigrations, type SqlBackend } from '../db/index.js';
import { assertLifeMove, type EntityKind, type Life } from './life.js';
import { MemoryModel, MemoryModelTxnRunner, type ModelData } from './memory-model-txn-runner.js';
import { describeAssert } from './model-asserts.js';
import { TxnAbortedError } from './model-errors.js';
import type { ModelTxnRunner } from './model-txn-runner.js';
import type { Assert, CountKind, EntityRef, ModelTxn, ModelView, Op, RelationScope } from './model-types.js';
import { type ModelDatabase, type ModelDb, modelMigrationList } from './sql-model-schema.js';
import { systemsChangedBy } from './txn-systems.js';

export type { SqlBackend } from '../db/index.js';

/**
 * Every model write on PostgreSQL takes this transaction-scoped advisory lock first: asserts are
 * checked with plain reads, and READ COMMITTED alone would let two transactions both see "not the
 * last unit" and both skip the removal. One lock for the whole model is Juju's single txn queue;
 * SQLite's BEGIN IMMEDIATE already serializes writers the same way.
 */
export const modelLockKey = 0x6d_6f_64_65_6c; // "model"

/** Marks a system as changed by the write it is called in (its page and status are stale). */
export type MarkSystemChanged = (system: string) => void;

/**
 * Runs `fn` in one write transaction of the model: serialized against every other model write.
 * The systems `fn` marks get one `system_changed` event each, committed with the write, so a
 * watcher of `GET /v1/events` (the console's system page) reads them again at once instead of on
 * a timer: a unit's life, a deploy's progress and its end have no BBS record of their own.
 */
export async function modelWrite<T>(
  backend: SqlBackend,
  fn: (db: ModelDb, changed: MarkSystemChanged) => Promise<T>,
  now: () => Date = () => new Date(),
): Promise<T> {
  return backend.write(async (tx) => {
    if (backend.kind === 'postgres') await sql`SELECT pg_advisory_xact_lock(${modelLockKey})`.execute(tx);
    const systems = new Set<string>();
    const result = await fn(tx.withTables<ModelDatabase>(), (system) => {
      if (system !== '') systems.add(system);
    });
    const events = [...systems].sort().map((system) => ({ type: systemChangedEvent, system }));
    await insertEvents(tx, backend.kind, events, now().toISOString());
    return result;
  });
}

/** The event type of a model write that changed a system (`{ system }`). */
export const systemChangedEvent = 'system_changed';

export async function modelRead<T>(backend: SqlBackend, fn: (db: ModelDb) => Promise<T>): Promise<T> {
  return backend.read(async (tx) => fn(tx.withTables<ModelDatabase>()));
}

/** Creates the model's tables on a BBS database (idempotent; db's one runner, under its one lock). */
export async function migrateModel(backend: SqlBackend, now: Date): Promise<void> {
  await runMigrations(backend, [modelMigrationList], now);
}

function integrity(rule: string, message: string): BerthError {
  // Same contract as the memory runner: an op no assert protected is a bug in the rule.
  return new BerthError('internal', `Cannot apply ${rule}: ${message}`, { rule });
}

const tableOf = {
  cell: { table: 'model_cells', key: 'id' },
  service: { table: 'model_services', key: 'name' },
  unit: { table: 'model_units', key: 'name' },
  relation: { table: 'model_relations', key: 'id' },
} as const;

/**
 * The store-backed `ModelTxnRunner`: each `run` is one SQL transaction that checks every assert
 * with queries and applies the ops, or writes nothing and throws `TxnAbortedError`. Ops get the
 * same integrity checks as `MemoryModelTxnRunner` (illegal life moves, removing something still
 * referenced), so the rules behave identically on both (`model-txn-runner.contract.test.ts`).
 *
 * `read()` returns an in-memory snapshot (rules are synchronous functions of a view). The snapshot
 * is cached and kept current by applying this runner's own committed txns to it; any other
 * writer's commit bumps `model_meta.version`, and the next `read()` reloads.
 */
export class SqlModelTxnRunner implements ModelTxnRunner {
  readonly backend: SqlBackend;
  #cache: { version: number; runner: MemoryModelTxnRunner } | undefined;

  private constructor(backend: SqlBackend) {
    this.backend = backend;
  }

  /** Migrates the model tables (if needed) and returns a runner on them. */
  static async open(backend: SqlBackend, now: Date = new Date()): Promise<SqlModelTxnRunner> {
    await migrateModel(backend, now);
    return new SqlModelTxnRunner(backend);
  }

  async read(): Promise<ModelView> {
    const version = await modelRead(this.backend, (db) => currentVersion(db));
    if (this.#cache && this.#cache.version === version) return this.#cache.runner.model;
    const loaded = await modelRead(this.backend, async (db) => ({
      version: await currentVersion(db),
      model: await loadModel(db),
    }));
    this.#cache = { version: loaded.version, runner: new MemoryModelTxnRunner(loaded.model) };
    return loaded.model;
  }

  /** Every record straight from the tables (not the cache), for comparisons and dumps. */
  async dump(): Promise<ModelData> {
    return modelRead(this.backend, async (db) => (await loadModel(db)).toData());
  }

  async run(txn: ModelTxn): Promise<void> {
    const version = await modelWrite(this.backend, async (db, changed) => {
      const failed = await firstFailedAssert(db, txn.asserts);
      if (failed !== null) throw new TxnAbortedError(txn.rule, failed);
      for (const op of txn.ops) await applyOp(db, txn.rule, op);
      for (const system of systemsChangedBy(txn.ops)) changed(system);
      await db.updateTable('model_meta').set({ version: sql`version + 1` }).where('id', '=', 1).execute();
      return currentVersion(db);
    });
    const cache = this.#cache;
    if (cache && cache.version === version - 1) {
      try {
        cache.runner.apply(txn);
        cache.version = version;
        return;
      } catch {
        // catch-all: the snapshot disagrees with the tables, which already hold the change: drop it,
        // the next read reloads.
      }
    }
    this.#cache = undefined;
  }
}

async function currentVersion(db: ModelDb): Promise<number> {
  const row = await db
    .selectFrom('model_meta')
    .select('version')
    .where('id', '=', 1)
    .executeTakeFirstOrThrow();
  return Number(row.version);
}

/** Loads every model table into a `MemoryModel` (its indexes answer the rules' questions). */
export async function loadModel(db: ModelDb): Promise<MemoryModel> {
  return MemoryModel.fromData({
    cells: (await db.selectFrom('model_cells').selectAll().execute()).map((c) => ({
      id: c.id,
      life: c.life as Life,
    })),
    services: (await db.selectFrom('model_services').selectAll().execute()).map((s) => ({
      name: s.name,
      life: s.life as Life,
      subordinate: s.subordinate === 1,
    })),
    units: (await db.selectFrom('model_units').selectAll().execute()).map((u) => ({
      name: u.name,
      service: u.service,
      index: u.idx,
      life: u.life as Life,
      cell_id: u.cell_id,
      principal: u.principal,
    })),
    relations: (await db.selectFrom('model_relations').selectAll().execute()).map((r) => ({
      id: r.id,
      endpoints: [r.endpoint_a, r.endpoint_b] as const,
      scope: r.scope as RelationScope,
      life: r.life as Life,
    })),
    scopes: (await db.selectFrom('model_scopes').selectAll().execute()).map(
      (s) => [s.relation_id, s.unit] as const,
    ),
    cleanups: (await db.selectFrom('model_cleanups').selectAll().execute()).map((j) => ({
      id: j.id,
      kind: j.kind as 'service-dying',
      target: j.target,
      due_at: j.due_at,
    })),
  });
}

async function lifeOf(db: ModelDb, entity: EntityRef): Promise<Life | undefined> {
  const { table, key } = tableOf[entity.kind];
  const row = await db
    .selectFrom(table)
    .select('life')
    .where(key as 'id', '=', entity.id)
    .executeTakeFirst();
  return row?.life as Life | undefined;
}

async function count(db: ModelDb, of: CountKind, id: string): Promise<number> {
  const n = (q: { executeTakeFirstOrThrow(): Promise<{ n: number | string | bigint }> }) =>
    q.executeTakeFirstOrThrow().then((r) => Number(r.n));
  const all = sql<number>`count(*)`.as('n');
  switch (of) {
    case 'units-of-service':
      return n(db.selectFrom('model_units').select(all).where('service', '=', id));
    case 'alive-units-of-service':
      return n(
        db.selectFrom('model_units').select(all).where('service', '=', id).where('life', '=', 'alive'),
      );
    case 'relations-of-service':
      return n(
        db
          .selectFrom('model_relations')
          .select(all)
          .where((eb) => eb.or([eb('endpoint_a', '=', id), eb('endpoint_b', '=', id)])),
      );
    case 'alive-relations-of-service':
      return n(
        db
          .selectFrom('model_relations')
          .select(all)
          .where((eb) => eb.or([eb('endpoint_a', '=', id), eb('endpoint_b', '=', id)]))
          .where('life', '=', 'alive'),
      );
    case 'units-on-cell':
      return n(db.selectFrom('model_units').select(all).where('cell_id', '=', id));
    case 'subordinates-of-unit':
      return n(db.selectFrom('model_units').select(all).where('principal', '=', id));
    case 'alive-subordinates-of-unit':
      return n(
        db.selectFrom('model_units').select(all).where('principal', '=', id).where('life', '=', 'alive'),
      );
    case 'scope-of-relation':
      return n(db.selectFrom('model_scopes').select(all).where('relation_id', '=', id));
    case 'scopes-of-unit':
      return n(db.selectFrom('model_scopes').select(all).where('unit', '=', id));
  }
}

async function inScope(db: ModelDb, relation: string, unit: string): Promise<boolean> {
  const row = await db
    .selectFrom('model_scopes')
    .select('unit')
    .where('relation_id', '=', relation)
    .where('unit', '=', unit)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Life and absence asserts are fetched in one query per kind (a batched cleanup step asserts 500
 * units), then every assert is evaluated in order, so the first failing one is reported, as the
 * memory runner does.
 */
async function firstFailedAssert(db: ModelDb, asserts: readonly Assert[]): Promise<string | null> {
  const wanted = new Map<EntityKind, Set<string>>();
  for (const a of asserts) {
    if (a.kind === 'life' || a.kind === 'absent') {
      const ids = wanted.get(a.entity.kind) ?? new Set<string>();
      wanted.set(a.entity.kind, ids);
      ids.add(a.entity.id);
    }
  }
  const lives = new Map<string, Life>();
  for (const [kind, ids] of wanted) {
    const { table, key } = tableOf[kind];
    const all = [...ids];
    for (let i = 0; i < all.length; i += 500) {
      const rows = await db
        .selectFrom(table)
        .select([`${key} as id` as 'id', 'life'])
        .where(key as 'id', 'in', all.slice(i, i + 500))
        .execute();
      for (const r of rows as { id: string; life: string }[])
        lives.set(`${kind}\u0000${r.id}`, r.life as Life);
    }
  }
  const holds = async (a: Assert): Promise<boolean> => {
    switch (a.kind) {
      case 'life': {
        const life = lives.get(`${a.entity.kind}\u0000${a.entity.id}`);
        return life !== undefined && a.in.includes(life);
      }
      case 'absent':
        return !lives.has(`${a.entity.kind}\u0000${a.entity.id}`);
      case 'count': {
        const n = await count(db, a.of, a.id);
        return a.op === 'eq' ? n === a.value : n > a.value;
      }
      case 'in-scope':
        return (await inScope(db, a.relation, a.unit)) === a.is;
      case 'unit-cell': {
        const row = await db
          .selectFrom('model_units')
          .select('cell_id')
          .where('name', '=', a.unit)
          .executeTakeFirst();
        return row !== undefined && row.cell_id === a.cell_id;
      }
      case 'any': {
        // Nested asserts are read live: `any` is rare and small ("not the last reference").
        for (const x of a.of) if (await holdsLive(db, x)) return true;
        return false;
      }
    }
  };
  for (const a of asserts) if (!(await holds(a))) return describeAssert(a);
  return null;
}

async function holdsLive(db: ModelDb, a: Assert): Promise<boolean> {
  switch (a.kind) {
    case 'life': {
      const life = await lifeOf(db, a.entity);
      return life !== undefined && a.in.includes(life);
    }
    case 'absent':
      return (await lifeOf(db, a.entity)) === undefined;
    default:
      return (await firstFailedAssert(db, [a])) === null;
  }
}

async function referrers(db: ModelDb, kind: EntityKind, id: string): Promise<number> {
  switch (kind) {
    case 'cell':
      return count(db, 'units-on-cell', id);
    case 'service':
      return (await count(db, 'units-of-service', id)) + (await count(db, 'relations-of-service', id));
    case 'unit':
      return (await count(db, 'subordinates-of-unit', id)) + (await count(db, 'scopes-of-unit', id));
    case 'relation':
      return count(db, 'scope-of-relation', id);
  }
}

async function applyOp(db: ModelDb, rule: string, op: Op): Promise<void> {
  switch (op.op) {
    case 'insert-cell':
      if (await lifeOf(db, { kind: 'cell', id: op.cell.id }))
        throw integrity(rule, `cell ${op.cell.id} exists`);
      await db.insertInto('model_cells').values({ id: op.cell.id, life: op.cell.life }).execute();
      return;
    case 'insert-service': {
      const s = op.service;
      if (await lifeOf(db, { kind: 'service', id: s.name }))
        throw integrity(rule, `service ${s.name} exists`);
      await db
        .insertInto('model_services')
        .values({ name: s.name, life: s.life, subordinate: s.subordinate ? 1 : 0 })
        .execute();
      return;
    }
    case 'insert-unit': {
      const u = op.unit;
      if (await lifeOf(db, { kind: 'unit', id: u.name })) throw integrity(rule, `unit ${u.name} exists`);
      if (!(await lifeOf(db, { kind: 'service', id: u.service })))
        throw integrity(rule, `service ${u.service} is missing`);
      if (u.principal !== null && !(await lifeOf(db, { kind: 'unit', id: u.principal })))
        throw integrity(rule, `principal ${u.principal} is missing`);
      if (u.cell_id !== null && !(await lifeOf(db, { kind: 'cell', id: u.cell_id })))
        throw integrity(rule, `cell ${u.cell_id} is missing`);
      await db
        .insertInto('model_units')
        .values({
          name: u.name,
          service: u.service,
          idx: u.index,
          life: u.life,
          cell_id: u.cell_id,
          principal: u.principal,
        })
        .execute();
      return;
    }
    case 'insert-relation': {
      const r = op.relation;
      if (await lifeOf(db, { kind: 'relation', id: r.id })) throw integrity(rule, `relation ${r.id} exists`);
      for (const s of r.endpoints)
        if (!(await lifeOf(db, { kind: 'service', id: s }))) throw integrity(rule, `service ${s} is missing`);
      await db
        .insertInto('model_relations')
        .values({
          id: r.id,
          endpoint_a: r.endpoints[0],
          endpoint_b: r.endpoints[1],
          scope: r.scope,
          life: r.life,
        })
        .execute();
      return;
    }
    case 'set-life': {
      const from = await lifeOf(db, op.entity);
      if (from === undefined) throw integrity(rule, `${op.entity.kind} ${op.entity.id} is missing`);
      assertLifeMove(op.entity.kind, from, op.to, op.entity.id);
      const { table, key } = tableOf[op.entity.kind];
      await db
        .updateTable(table)
        .set({ life: op.to })
        .where(key as 'id', '=', op.entity.id)
        .execute();
      return;
    }
    case 'remove': {
      const from = await lifeOf(db, op.entity);
      if (from === undefined) throw integrity(rule, `${op.entity.kind} ${op.entity.id} is missing`);
      assertLifeMove(op.entity.kind, from, 'removed', op.entity.id);
      // Seed 003 "References": where X references Y, Y cannot go while X exists.
      const n = await referrers(db, op.entity.kind, op.entity.id);
      if (n > 0) throw integrity(rule, `${op.entity.kind} ${op.entity.id} is still referenced ${n} times`);
      const { table, key } = tableOf[op.entity.kind];
      await db
        .deleteFrom(table)
        .where(key as 'id', '=', op.entity.id)
        .execute();
      return;
    }
    case 'assign-unit': {
      if (!(await lifeOf(db, { kind: 'unit', id: op.unit })))
        throw integrity(rule, `unit ${op.unit} is missing`);
      if (!(await lifeOf(db, { kind: 'cell', id: op.cell_id })))
        throw integrity(rule, `cell ${op.cell_id} is missing`);
      await db.updateTable('model_units').set({ cell_id: op.cell_id }).where('name', '=', op.unit).execute();
      return;
    }
    case 'enter-scope': {
      if (
        !(await lifeOf(db, { kind: 'relation', id: op.relation })) ||
        !(await lifeOf(db, { kind: 'unit', id: op.unit }))
      ) {
        throw integrity(rule, `relation ${op.relation} or unit ${op.unit} is missing`);
      }
      if (await inScope(db, op.relation, op.unit)) throw integrity(rule, `${op.unit} is already in scope`);
      await db.insertInto('model_scopes').values({ relation_id: op.relation, unit: op.unit }).execute();
      return;
    }
    case 'leave-scope': {
      if (!(await inScope(db, op.relation, op.unit))) throw integrity(rule, `${op.unit} is not in scope`);
      await db
        .deleteFrom('model_scopes')
        .where('relation_id', '=', op.relation)
        .where('unit', '=', op.unit)
        .execute();
      return;
    }
    case 'insert-cleanup':
      await db
        .insertInto('model_cleanups')
        .values({ id: op.job.id, kind: op.job.kind, target: op.job.target, due_at: op.job.due_at })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    case 'remove-cleanup':
      await db.deleteFrom('model_cleanups').where('id', '=', op.id).execute();
      return;
  }
}
