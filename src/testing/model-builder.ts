import {
  type AgentStep,
  addCell,
  addRelation,
  addService,
  addSidecarUnit,
  addUnit,
  assignUnitToCell,
  enterScope,
  type MemoryModel,
  MemoryModelTxnRunner,
  type ModelTxn,
  type ModelView,
  type RelationScope,
  relationId,
  unitName,
} from '../model/index.js';

/**
 * Builds an in-memory model through the rules themselves (never by writing records directly), for
 * tests and benchmarks: every fixture is a state the rules can reach.
 */
export class ModelBuilder {
  readonly runner: MemoryModelTxnRunner;

  constructor(runner: MemoryModelTxnRunner = new MemoryModelTxnRunner()) {
    this.runner = runner;
  }

  get view(): MemoryModel {
    return this.runner.model;
  }

  /** Builds from the current model and applies at once; returns the txn (null: nothing to do). */
  apply(build: (view: ModelView) => ModelTxn | null): ModelTxn | null {
    const t = build(this.runner.model);
    if (t) this.runner.apply(t);
    return t;
  }

  /** Applies an agent's step when it is a transaction; returns what kind of step it was. */
  step(build: (view: ModelView) => AgentStep): AgentStep['kind'] {
    const s = build(this.runner.model);
    if (s.kind === 'txn') this.runner.apply(s.txn);
    return s.kind;
  }

  cell(id: string): this {
    this.apply((v) => addCell(v, id));
    return this;
  }

  service(name: string, subordinate = false): this {
    this.apply((v) => addService(v, name, { subordinate }));
    return this;
  }

  /** Adds units `from..from+count-1` of `service`, placed on `cells` round-robin when given. */
  units(service: string, count: number, cells: readonly string[] = [], from = 0): this {
    for (let i = from; i < from + count; i++) {
      this.apply((v) => addUnit(v, service, i));
      const cell = cells[i % Math.max(cells.length, 1)];
      if (cell !== undefined) this.apply((v) => assignUnitToCell(v, unitName(service, i), cell));
    }
    return this;
  }

  relate(a: string, b: string, scope: RelationScope = 'global'): this {
    this.apply((v) => addRelation(v, a, b, scope));
    return this;
  }

  enter(a: string, b: string, unit: string): this {
    this.apply((v) => enterScope(v, relationId(a, b), unit));
    return this;
  }

  sidecar(principal: string, sidecarService: string): this {
    this.apply((v) => addSidecarUnit(v, principal, sidecarService));
    return this;
  }
}
