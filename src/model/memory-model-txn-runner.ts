import { BerthError } from '../core/index.js';
import { assertLifeMove, type EntityKind, type Life } from './life.js';
import { entityLife, failedAssert } from './model-asserts.js';
import { TxnAbortedError } from './model-errors.js';
import type { ModelTxnRunner } from './model-txn-runner.js';
import type {
  Assert,
  CellDoc,
  CleanupJob,
  CountKind,
  EntityRef,
  ModelTxn,
  ModelView,
  Op,
  RelationDoc,
  ServiceDoc,
  UnitDoc,
} from './model-types.js';

type Undo = () => void;

/** Plain data of a whole model, for tests, dumps and status. */
export interface ModelData {
  readonly cells: readonly CellDoc[];
  readonly services: readonly ServiceDoc[];
  readonly units: readonly UnitDoc[];
  readonly relations: readonly RelationDoc[];
  /** [relation id, unit name] pairs. */
  readonly scopes: readonly (readonly [string, string])[];
  readonly cleanups: readonly CleanupJob[];
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  set.add(value);
}

function deleteFrom<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}

const emptySet: ReadonlySet<string> = new Set();

function integrity(rule: string, message: string): BerthError {
  // A rule built ops its own asserts do not protect: a bug in the rule, not a race.
  return new BerthError('internal', `Cannot apply ${rule}: ${message}`, { rule });
}

/**
 * The in-memory model with the indexes the rules ask for (units by service and life, by cell, by
 * principal; relations by service; scopes both ways), so a step over a 100,000-unit service costs
 * O(batch), not O(units).
 */
export class MemoryModel implements ModelView {
  readonly #cellDocs = new Map<string, CellDoc>();
  readonly #serviceDocs = new Map<string, ServiceDoc>();
  readonly #unitDocs = new Map<string, UnitDoc>();
  readonly #relationDocs = new Map<string, RelationDoc>();
  readonly #cleanupDocs = new Map<string, CleanupJob>();
  readonly #unitsByServiceLife = new Map<string, Map<Life, Set<string>>>();
  readonly #unitsByCell = new Map<string, Set<string>>();
  readonly #subsByPrincipal = new Map<string, Set<string>>();
  readonly #relationsByService = new Map<string, Set<string>>();
  readonly #scopeUnits = new Map<string, Set<string>>();
  readonly #unitScopes = new Map<string, Set<string>>();

  /**
   * A model from plain data (`toData`'s shape): every record goes through the same checked inserts
   * as a transaction's ops, so inconsistent data (a unit on a cell that is not there, a sidecar
   * without its principal) is refused rather than indexed.
   */
  static fromData(data: ModelData): MemoryModel {
    const model = new MemoryModel();
    const load = (op: Op) => model.applyOp('load', op);
    for (const cell of data.cells) load({ op: 'insert-cell', cell });
    for (const service of data.services) load({ op: 'insert-service', service });
    // Principals before their sidecars: a unit names its principal, which must already be there.
    const units = [...data.units].sort((x, y) => Number(x.principal !== null) - Number(y.principal !== null));
    for (const unit of units) load({ op: 'insert-unit', unit });
    for (const relation of data.relations) load({ op: 'insert-relation', relation });
    for (const [relation, unit] of data.scopes) load({ op: 'enter-scope', relation, unit });
    for (const job of data.cleanups) load({ op: 'insert-cleanup', job });
    return model;
  }

  cell(id: string): CellDoc | undefined {
    return this.#cellDocs.get(id);
  }
  service(name: string): ServiceDoc | undefined {
    return this.#serviceDocs.get(name);
  }
  unit(name: string): UnitDoc | undefined {
    return this.#unitDocs.get(name);
  }
  relation(id: string): RelationDoc | undefined {
    return this.#relationDocs.get(id);
  }
  cleanup(id: string): CleanupJob | undefined {
    return this.#cleanupDocs.get(id);
  }
  cells(): Iterable<CellDoc> {
    return this.#cellDocs.values();
  }
  services(): Iterable<ServiceDoc> {
    return this.#serviceDocs.values();
  }
  relations(): Iterable<RelationDoc> {
    return this.#relationDocs.values();
  }
  cleanups(): Iterable<CleanupJob> {
    return this.#cleanupDocs.values();
  }
  *unitsOfService(service: string, life?: Life): Iterable<string> {
    const byLife = this.#unitsByServiceLife.get(service);
    if (!byLife) return;
    for (const [l, names] of byLife) if (life === undefined || l === life) yield* names;
  }
  unitsOnCell(cell: string): Iterable<string> {
    return this.#unitsByCell.get(cell) ?? emptySet;
  }
  subordinatesOf(unit: string): Iterable<string> {
    return this.#subsByPrincipal.get(unit) ?? emptySet;
  }
  relationsOfService(service: string): Iterable<string> {
    return this.#relationsByService.get(service) ?? emptySet;
  }
  unitsInScope(relation: string): Iterable<string> {
    return this.#scopeUnits.get(relation) ?? emptySet;
  }
  scopesOfUnit(unit: string): Iterable<string> {
    return this.#unitScopes.get(unit) ?? emptySet;
  }
  isInScope(relation: string, unit: string): boolean {
    return this.#scopeUnits.get(relation)?.has(unit) ?? false;
  }

  count(of: CountKind, id: string): number {
    switch (of) {
      case 'units-of-service': {
        let n = 0;
        for (const names of this.#unitsByServiceLife.get(id)?.values() ?? []) n += names.size;
        return n;
      }
      case 'alive-units-of-service':
        return this.#unitsByServiceLife.get(id)?.get('alive')?.size ?? 0;
      case 'relations-of-service':
        return this.#relationsByService.get(id)?.size ?? 0;
      case 'alive-relations-of-service':
        return countWhere(this.relationsOfService(id), (r) => this.#relationDocs.get(r)?.life === 'alive');
      case 'units-on-cell':
        return this.#unitsByCell.get(id)?.size ?? 0;
      case 'subordinates-of-unit':
        return this.#subsByPrincipal.get(id)?.size ?? 0;
      case 'alive-subordinates-of-unit':
        return countWhere(this.subordinatesOf(id), (u) => this.#unitDocs.get(u)?.life === 'alive');
      case 'scope-of-relation':
        return this.#scopeUnits.get(id)?.size ?? 0;
      case 'scopes-of-unit':
        return this.#unitScopes.get(id)?.size ?? 0;
    }
  }

  lifeOf(entity: EntityRef): Life | undefined {
    return entityLife(this, entity);
  }

  /** Describes the first assert that does not hold, or returns null when all hold. */
  failedAssert(asserts: readonly Assert[]): string | null {
    return failedAssert(this, asserts);
  }

  /** Applies one op, returning how to take it back; throws on an op no assert protected. */
  applyOp(rule: string, op: Op): Undo {
    switch (op.op) {
      case 'insert-cell':
        if (this.#cellDocs.has(op.cell.id)) throw integrity(rule, `cell ${op.cell.id} exists`);
        this.#cellDocs.set(op.cell.id, op.cell);
        return () => this.#cellDocs.delete(op.cell.id);
      case 'insert-service':
        if (this.#serviceDocs.has(op.service.name))
          throw integrity(rule, `service ${op.service.name} exists`);
        this.#serviceDocs.set(op.service.name, op.service);
        return () => this.#serviceDocs.delete(op.service.name);
      case 'insert-unit': {
        const u = op.unit;
        if (this.#unitDocs.has(u.name)) throw integrity(rule, `unit ${u.name} exists`);
        if (!this.#serviceDocs.has(u.service)) throw integrity(rule, `service ${u.service} is missing`);
        if (u.principal !== null && !this.#unitDocs.has(u.principal)) {
          throw integrity(rule, `principal ${u.principal} is missing`);
        }
        if (u.cell_id !== null && !this.#cellDocs.has(u.cell_id))
          throw integrity(rule, `cell ${u.cell_id} is missing`);
        this.#putUnit(u);
        return () => this.#dropUnit(u);
      }
      case 'insert-relation': {
        const r = op.relation;
        if (this.#relationDocs.has(r.id)) throw integrity(rule, `relation ${r.id} exists`);
        for (const s of r.endpoints)
          if (!this.#serviceDocs.has(s)) throw integrity(rule, `service ${s} is missing`);
        this.#relationDocs.set(r.id, r);
        for (const s of r.endpoints) addTo(this.#relationsByService, s, r.id);
        return () => {
          this.#relationDocs.delete(r.id);
          for (const s of r.endpoints) deleteFrom(this.#relationsByService, s, r.id);
        };
      }
      case 'set-life':
        return this.#setLife(rule, op.entity, op.to);
      case 'remove':
        return this.#remove(rule, op.entity);
      case 'assign-unit': {
        const before = this.#unitDocs.get(op.unit);
        if (!before) throw integrity(rule, `unit ${op.unit} is missing`);
        if (!this.#cellDocs.has(op.cell_id)) throw integrity(rule, `cell ${op.cell_id} is missing`);
        return this.#replaceUnit(before, { ...before, cell_id: op.cell_id });
      }
      case 'enter-scope': {
        if (!this.#relationDocs.has(op.relation) || !this.#unitDocs.has(op.unit)) {
          throw integrity(rule, `relation ${op.relation} or unit ${op.unit} is missing`);
        }
        if (this.isInScope(op.relation, op.unit)) throw integrity(rule, `${op.unit} is already in scope`);
        addTo(this.#scopeUnits, op.relation, op.unit);
        addTo(this.#unitScopes, op.unit, op.relation);
        return () => {
          deleteFrom(this.#scopeUnits, op.relation, op.unit);
          deleteFrom(this.#unitScopes, op.unit, op.relation);
        };
      }
      case 'leave-scope': {
        if (!this.isInScope(op.relation, op.unit)) throw integrity(rule, `${op.unit} is not in scope`);
        deleteFrom(this.#scopeUnits, op.relation, op.unit);
        deleteFrom(this.#unitScopes, op.unit, op.relation);
        return () => {
          addTo(this.#scopeUnits, op.relation, op.unit);
          addTo(this.#unitScopes, op.unit, op.relation);
        };
      }
      case 'insert-cleanup': {
        if (this.#cleanupDocs.has(op.job.id)) return () => {};
        this.#cleanupDocs.set(op.job.id, op.job);
        return () => this.#cleanupDocs.delete(op.job.id);
      }
      case 'remove-cleanup': {
        const before = this.#cleanupDocs.get(op.id);
        if (!before) return () => {};
        this.#cleanupDocs.delete(op.id);
        return () => this.#cleanupDocs.set(op.id, before);
      }
    }
  }

  #setLife(rule: string, entity: EntityRef, to: Life): Undo {
    const from = this.lifeOf(entity);
    if (from === undefined) throw integrity(rule, `${entity.kind} ${entity.id} is missing`);
    assertLifeMove(entity.kind, from, to, entity.id);
    switch (entity.kind) {
      case 'cell':
        return this.#replaceDoc(this.#cellDocs, entity.id, to);
      case 'service':
        return this.#replaceDoc(this.#serviceDocs, entity.id, to);
      case 'relation':
        return this.#replaceDoc(this.#relationDocs, entity.id, to);
      case 'unit': {
        const before = this.#unitDocs.get(entity.id)!;
        return this.#replaceUnit(before, { ...before, life: to });
      }
    }
  }

  #replaceDoc<T extends { readonly life: Life }>(map: Map<string, T>, id: string, to: Life): Undo {
    const before = map.get(id)!;
    map.set(id, { ...before, life: to });
    return () => map.set(id, before);
  }

  #remove(rule: string, entity: EntityRef): Undo {
    const from = this.lifeOf(entity);
    if (from === undefined) throw integrity(rule, `${entity.kind} ${entity.id} is missing`);
    assertLifeMove(entity.kind, from, 'removed', entity.id);
    // Seed 003 "References": where X references Y, Y cannot go while X exists.
    const referrers = this.#referrers(entity.kind, entity.id);
    if (referrers > 0)
      throw integrity(rule, `${entity.kind} ${entity.id} is still referenced ${referrers} times`);
    switch (entity.kind) {
      case 'cell': {
        const before = this.#cellDocs.get(entity.id)!;
        this.#cellDocs.delete(entity.id);
        return () => this.#cellDocs.set(entity.id, before);
      }
      case 'service': {
        const before = this.#serviceDocs.get(entity.id)!;
        this.#serviceDocs.delete(entity.id);
        return () => this.#serviceDocs.set(entity.id, before);
      }
      case 'relation': {
        const before = this.#relationDocs.get(entity.id)!;
        this.#relationDocs.delete(entity.id);
        for (const s of before.endpoints) deleteFrom(this.#relationsByService, s, before.id);
        return () => {
          this.#relationDocs.set(entity.id, before);
          for (const s of before.endpoints) addTo(this.#relationsByService, s, before.id);
        };
      }
      case 'unit': {
        const before = this.#unitDocs.get(entity.id)!;
        this.#dropUnit(before);
        return () => this.#putUnit(before);
      }
    }
  }

  #referrers(kind: EntityKind, id: string): number {
    switch (kind) {
      case 'cell':
        return this.count('units-on-cell', id);
      case 'service':
        return this.count('units-of-service', id) + this.count('relations-of-service', id);
      case 'unit':
        return this.count('subordinates-of-unit', id) + this.count('scopes-of-unit', id);
      case 'relation':
        return this.count('scope-of-relation', id);
    }
  }

  #putUnit(u: UnitDoc): void {
    this.#unitDocs.set(u.name, u);
    let byLife = this.#unitsByServiceLife.get(u.service);
    if (!byLife) {
      byLife = new Map();
      this.#unitsByServiceLife.set(u.service, byLife);
    }
    addTo(byLife, u.life, u.name);
    if (u.cell_id !== null) addTo(this.#unitsByCell, u.cell_id, u.name);
    if (u.principal !== null) addTo(this.#subsByPrincipal, u.principal, u.name);
  }

  #dropUnit(u: UnitDoc): void {
    this.#unitDocs.delete(u.name);
    const byLife = this.#unitsByServiceLife.get(u.service);
    if (byLife) {
      deleteFrom(byLife, u.life, u.name);
      if (byLife.size === 0) this.#unitsByServiceLife.delete(u.service);
    }
    if (u.cell_id !== null) deleteFrom(this.#unitsByCell, u.cell_id, u.name);
    if (u.principal !== null) deleteFrom(this.#subsByPrincipal, u.principal, u.name);
  }

  #replaceUnit(before: UnitDoc, after: UnitDoc): Undo {
    this.#dropUnit(before);
    this.#putUnit(after);
    return () => {
      this.#dropUnit(after);
      this.#putUnit(before);
    };
  }

  /** Every record as plain data, sorted, for comparisons and status output. */
  toData(): ModelData {
    const byKey =
      <T>(key: (t: T) => string) =>
      (a: T, b: T) =>
        key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
    const scopes: [string, string][] = [];
    for (const [relation, units] of this.#scopeUnits) for (const unit of units) scopes.push([relation, unit]);
    return {
      cells: [...this.#cellDocs.values()].sort(byKey((c) => c.id)),
      services: [...this.#serviceDocs.values()].sort(byKey((s) => s.name)),
      units: [...this.#unitDocs.values()].sort(byKey((u) => u.name)),
      relations: [...this.#relationDocs.values()].sort(byKey((r) => r.id)),
      scopes: scopes.sort(byKey((s) => `${s[0]}\u0000${s[1]}`)),
      cleanups: [...this.#cleanupDocs.values()].sort(byKey((j) => j.id)),
    };
  }
}

function countWhere<T>(items: Iterable<T>, pred: (t: T) => boolean): number {
  let n = 0;
  for (const item of items) if (pred(item)) n++;
  return n;
}

/** Statistics a benchmark or a test may read. */
export interface TxnRunnerStats {
  readonly txns: number;
  readonly aborted: number;
  readonly largest_txn_size: number;
  readonly largest_txn_rule: string;
}

/**
 * The reference `ModelTxnRunner`: checks every assert, then applies every op, rolling back the
 * applied ones if an op turns out illegal, so a txn is all or nothing.
 */
export class MemoryModelTxnRunner implements ModelTxnRunner {
  readonly model: MemoryModel;
  #txns = 0;
  #aborted = 0;
  #largest = 0;
  #largestRule = '';

  constructor(model: MemoryModel = new MemoryModel()) {
    this.model = model;
  }

  async read(): Promise<ModelView> {
    return this.model;
  }

  async run(txn: ModelTxn): Promise<void> {
    this.apply(txn);
  }

  /** The synchronous core of `run`, for tests and benchmarks that step the model by hand. */
  apply(txn: ModelTxn): void {
    const failed = this.model.failedAssert(txn.asserts);
    if (failed !== null) {
      this.#aborted++;
      throw new TxnAbortedError(txn.rule, failed);
    }
    const undo: Undo[] = [];
    try {
      for (const op of txn.ops) undo.push(this.model.applyOp(txn.rule, op));
    } catch (err) {
      for (let i = undo.length - 1; i >= 0; i--) undo[i]!();
      throw err;
    }
    this.#txns++;
    const size = txn.asserts.length + txn.ops.length;
    if (size > this.#largest) {
      this.#largest = size;
      this.#largestRule = txn.rule;
    }
  }

  /** Starts counting afresh (a benchmark measures one phase). */
  resetStats(): void {
    this.#txns = 0;
    this.#aborted = 0;
    this.#largest = 0;
    this.#largestRule = '';
  }

  stats(): TxnRunnerStats {
    return {
      txns: this.#txns,
      aborted: this.#aborted,
      largest_txn_size: this.#largest,
      largest_txn_rule: this.#largestRule,
    };
  }
}
