import {
  BerthError,
  describeError,
  InvalidArgumentError,
  isNotFound,
  isSuperseded,
  NotFoundError,
  orAbsent,
} from '../core/index.js';
import type { UserAction } from '../history/index.js';
import type { ActionControl } from './action-runner.js';
import { destroyCell, ensureCellDead, removeCell } from './cell-rules.js';
import { readActionParams } from './entity-action-store.js';
import { forcedCellSkips, forcedUnitSkips, waitingOn } from './entity-plan.js';
import { type EntityRequest, parseStoredEntityRequest } from './entity-requests.js';
import { sidecarUnitIndex, systemDomain, unitName } from './instance-names.js';
import { ModelRuleError } from './model-errors.js';
import { runTxn } from './model-txn-runner.js';
import { addRelation, destroyRelation } from './relation-rules.js';
import { ensureUnits } from './service-model-writes.js';
import { destroyService } from './service-rules.js';
import type { ActionWork } from './sql-system-store.js';
import { isSidecarRecord, type ServiceRecord } from './system-service-record.js';
import { removeDesiredLRP, type SystemsContext, settle } from './systems-context.js';
import { relationId } from './txn-parts.js';
import { destroyUnit, forceDestroyUnit } from './unit-rules.js';

/** Records a user's action on a container (history's `recordUserAction`, bound to its store). */
export type RecordUserAction = (action: UserAction) => Promise<unknown>;

/** What one entity action knows while it runs: the request, who asked, and where to note. */
interface Run {
  readonly work: ActionWork;
  readonly control: ActionControl;
  readonly user: string;
}

/**
 * Executes seed 003's per-entity operations. Each does its transaction under the seed's rules, then
 * waits for the agents to do their part (the unit agents depart and set Dead, the machine agent
 * removes; the server's settle stands in for cells without their own agent) until the entity is
 * gone or the action times out with what it still waits for. `--force` does the agents' part in
 * the server instead (seed 003 "Implementation issues"), and what it skipped is written to the
 * action's log and, as a `user` item, to the history of every container affected. Every step reads
 * what exists first, so an action resumed after a crash runs again from the start.
 */
export class EntityExecutor {
  readonly #ctx: SystemsContext;
  readonly #record: RecordUserAction | undefined;

  constructor(ctx: SystemsContext, record?: RecordUserAction) {
    this.#ctx = ctx;
    this.#record = record;
  }

  async execute(work: ActionWork, control: ActionControl): Promise<void> {
    const stored = parseStoredEntityRequest(await readActionParams(this.#ctx.systems.backend, work.id));
    if (!stored) throw new BerthError('invalid_argument', `action ${work.id} has no readable request`);
    const run: Run = { work, control, user: stored.user };
    const request: EntityRequest = stored.request;
    switch (request.kind) {
      case 'unit-destroy':
        return this.#unitDestroy(run, request.path, request.index, request.force);
      case 'service-scale':
        return this.#serviceScale(run, request.path, request.instances);
      case 'service-destroy':
        return this.#serviceDestroy(run, request.path, request.force);
      case 'relation-add':
        return this.#relationAdd(run, request.a, request.b);
      case 'relation-remove':
        return this.#relationRemove(run, request.a, request.b);
      case 'cell-destroy':
        return this.#cellDestroy(run, request.cell, request.force);
    }
  }

  /**
   * `berth teardown SYSTEM --force`: before the teardown proper, every unit of the system is
   * forced, so the teardown waits for no unit or machine agent.
   */
  async forceSystemUnits(work: ActionWork, control: ActionControl, user: string): Promise<void> {
    const run: Run = { work, control, user };
    for (const row of await this.#ctx.systems.listServices(work.system)) {
      if (row.kind !== 'service') continue;
      const view = await this.#ctx.runner.read();
      for (const unit of [...view.unitsOfService(row.model_name)].sort()) {
        if (view.unit(unit)?.principal === null) await this.#forceUnit(run, row, unit, 'teardown');
      }
    }
  }

  async #unitDestroy(run: Run, path: string, index: number, force: boolean): Promise<void> {
    const { runner, now } = this.#ctx;
    const row = await this.#serviceRow(run.work.system, path);
    const unit = unitName(row.model_name, index);
    // Gone already: this action, resumed after a crash, had removed it (the request was checked
    // when accepted; nothing re-adds the unit while this action holds the service's lock).
    if (!(await runner.read()).unit(unit)) {
      await run.control.note(`unit ${path}/${index} is already gone`);
    } else if (force) {
      await this.#forceUnit(run, row, unit, 'unit destroy');
    } else {
      await runTxn(runner, (v) => (v.unit(unit)?.life === 'alive' ? destroyUnit(v, unit, now()) : null));
      await this.#tell(
        run,
        await this.#instancesOf(row, [index]),
        'destroy',
        `unit ${path}/${index} is Dying`,
      );
    }
    await this.#waitFor(run, async () => {
      const view = await runner.read();
      return view.unit(unit) ? waitingOn(view, unit) : null;
    });
    // The unit is gone; its instance goes with it, and the service (still at its count) gets a
    // new unit and instance at that index from the system agent: `service scale` runs fewer.
    await this.#retireInstance(row, index);
    await run.control.note(`unit ${path}/${index} removed; its instance is replaced`);
  }

  async #serviceScale(run: Run, path: string, instances: number): Promise<void> {
    const { store, systems } = this.#ctx;
    const row = await this.#serviceRow(run.work.system, path);
    if (isSidecarRecord(row))
      throw new ModelRuleError(
        'scale',
        `service ${path}`,
        'it is a sidecar: it has one unit per principal unit',
      );
    const before = row.spec.instances;
    // The stored definition first: the system agent restores what it says, so it must say N.
    await systems.putService({ ...row, spec: { ...row.spec, instances } });
    await ensureUnits(this.#ctx, row.model_name, instances);
    await store.updateDesiredLRP({ process_guid: row.process_guid, update: { instances } });
    await this.#tell(
      run,
      await this.#instancesOf(row),
      'scale',
      `service ${path} scaled ${before} → ${instances}`,
    );
    await this.#waitFor(run, async () => {
      const view = await this.#ctx.runner.read();
      const extra = [...view.unitsOfService(row.model_name)].filter(
        (u) => (view.unit(u)?.index ?? 0) >= instances,
      );
      return extra.length === 0
        ? null
        : `${extra.length} unit(s) above ${instances} not removed yet (${waitingOn(view, extra[0] ?? '')})`;
    });
  }

  async #serviceDestroy(run: Run, path: string, force: boolean): Promise<void> {
    const { runner, store, systems, now } = this.#ctx;
    const row = await this.#resumableServiceRow(run, path);
    if (!row) return;
    const containers = await this.#instancesOf(row);
    await runTxn(runner, (v) =>
      v.service(row.model_name)?.life === 'alive' ? destroyService(v, row.model_name, now()) : null,
    );
    if (force) {
      const view = await runner.read();
      for (const unit of [...view.unitsOfService(row.model_name)].sort())
        if (view.unit(unit)?.principal === null) await this.#forceUnit(run, row, unit, 'service destroy');
    } else {
      await this.#tell(run, containers, 'destroy', `service ${path} is Dying`);
    }
    const guids = new Set([row.process_guid, ...(row.old_process_guid ? [row.old_process_guid] : [])]);
    for (const d of await store.listDesiredLRPs({ domain: systemDomain(row.system) })) {
      if (guids.has(d.process_guid) || sidecarUnitIndex(row.process_guid, d.process_guid) !== undefined)
        await removeDesiredLRP(store, d.process_guid);
    }
    await systems.deleteService(row.system, row.path);
    await this.#waitFor(run, async () => {
      const view = await runner.read();
      const left = view.count('units-of-service', row.model_name);
      const relations = view.count('relations-of-service', row.model_name);
      if (!view.service(row.model_name)) return null;
      const first = [...view.unitsOfService(row.model_name)][0];
      return `service ${path} still has ${left} unit(s) and ${relations} relation(s)${first ? ` (${waitingOn(view, first)})` : ''}`;
    });
    await run.control.note(`service ${path} removed`);
  }

  async #relationAdd(run: Run, a: string, b: string): Promise<void> {
    const [ra, rb] = [await this.#serviceRow(run.work.system, a), await this.#serviceRow(run.work.system, b)];
    const id = relationId(ra.model_name, rb.model_name);
    // Resumed after a crash, the relation this action added exists: Alive is what was wanted.
    await runTxn(this.#ctx.runner, (v) =>
      v.relation(id)?.life === 'alive' && this.#resumed(run)
        ? null
        : addRelation(v, ra.model_name, rb.model_name, 'global'),
    );
    // The stored definition says so too, so the service's status and a later `deploy --path` agree.
    if (!ra.spec.relations.includes(b) && !rb.spec.relations.includes(a))
      await this.#ctx.systems.putService({
        ...ra,
        spec: { ...ra.spec, relations: [...ra.spec.relations, b] },
      });
    await this.#tell(
      run,
      [...(await this.#instancesOf(ra)), ...(await this.#instancesOf(rb))],
      'relate',
      `relation ${a} <-> ${b} added`,
    );
  }

  async #relationRemove(run: Run, a: string, b: string): Promise<void> {
    const { runner, systems, now } = this.#ctx;
    const [ra, rb] = [await this.#serviceRow(run.work.system, a), await this.#serviceRow(run.work.system, b)];
    const id = relationId(ra.model_name, rb.model_name);
    const rel = (await runner.read()).relation(id);
    if (!rel && this.#resumed(run)) return run.control.note(`relation ${a} <-> ${b} is already gone`);
    if (!rel) throw new NotFoundError('relation', `${a} <-> ${b} of system ${run.work.system}`);
    if (rel.scope === 'container')
      throw new ModelRuleError(
        'remove',
        `relation ${a} <-> ${b}`,
        'it pairs a sidecar with its principal: destroy the sidecar service instead',
      );
    await runTxn(runner, (v) => (v.relation(id)?.life === 'alive' ? destroyRelation(v, id, now()) : null));
    for (const [row, other] of [
      [ra, b],
      [rb, a],
    ] as const) {
      if (row.spec.relations.includes(other))
        await systems.putService({
          ...row,
          spec: { ...row.spec, relations: row.spec.relations.filter((r) => r !== other) },
        });
    }
    await this.#tell(
      run,
      [...(await this.#instancesOf(ra)), ...(await this.#instancesOf(rb))],
      'relate',
      `relation ${a} <-> ${b} removed`,
    );
    // Seed 003 Relations: the units in scope depart through their agents; the last one out removes it.
    await this.#waitFor(run, async () => {
      const view = await runner.read();
      const inScope = [...view.unitsInScope(id)].sort();
      return view.relation(id)
        ? `relation ${a} <-> ${b} is Dying with ${inScope.length} unit(s) in scope (${inScope.join(', ')})`
        : null;
    });
  }

  async #cellDestroy(run: Run, cell: string, force: boolean): Promise<void> {
    const { runner } = this.#ctx;
    const view = await runner.read();
    if (!view.cell(cell) && this.#resumed(run)) return run.control.note(`cell ${cell} is already gone`);
    if (!view.cell(cell)) throw new NotFoundError('cell', cell);
    if (force) {
      const skipped = forcedCellSkips(view, cell);
      for (const unit of [...view.unitsOnCell(cell)].sort()) {
        const u = view.unit(unit);
        if (!u || u.principal !== null) continue;
        const row = await this.#rowOfModelService(u.service);
        if (row) await this.#forceUnit(run, row, unit, 'cell destroy');
      }
      // The forced units' cleanups run now; then the cell is Dying, and Dead and removed by the
      // server in its machine agent's place (seed 003 footnote: `juju destroy-machine --force`).
      await settle(this.#ctx);
      await runTxn(runner, (v) => (v.cell(cell)?.life === 'alive' ? destroyCell(v, cell) : null));
      await runTxn(runner, (v) => (v.cell(cell)?.life === 'dying' ? ensureCellDead(v, cell) : null));
      await runTxn(runner, (v) => (v.cell(cell)?.life === 'dead' ? removeCell(v, cell) : null));
      await run.control.note(`cell destroy --force by ${run.user}: ${skipped}`);
      return;
    }
    await runTxn(runner, (v) => (v.cell(cell)?.life === 'alive' ? destroyCell(v, cell) : null));
    await run.control.note(`cell ${cell} is Dying; waiting for its machine agent`);
    await this.#waitFor(run, async () => {
      const c = (await runner.read()).cell(cell);
      return c ? `cell ${cell} is still ${c.life}: its machine agent has not set it Dead` : null;
    });
  }

  /** Forces one principal unit (and its sidecars) and says what was skipped: log and history. */
  async #forceUnit(run: Run, row: ServiceRecord, unit: string, verb: string): Promise<void> {
    const { runner, now } = this.#ctx;
    const view = await runner.read();
    const u = view.unit(unit);
    if (!u) return;
    const skipped = forcedUnitSkips(view, unit);
    await runTxn(runner, (v) => (v.unit(unit) ? forceDestroyUnit(v, unit, now()) : null));
    await this.#tell(
      run,
      await this.#instancesOf(row, [u.index]),
      'destroy',
      `${verb} --force of ${unit}: ${skipped}`,
    );
  }

  /** Notes a line in the action's log and records it on each container as the user's action. */
  async #tell(run: Run, containers: readonly string[], status: string, line: string): Promise<void> {
    await run.control.note(`${line} (by ${run.user})`);
    if (!this.#record) return;
    const at = this.#ctx.now();
    for (const container_id of new Set(containers)) {
      // History is the record, not the operation: a failed write is logged, the action goes on.
      await this.#record({ container_id, status, user_id: run.user, message: line, at }).catch((err) =>
        this.#ctx.log('recording a user action failed', { container_id, err: describeError(err) }),
      );
    }
  }

  /** Settles the model (the server's agents, cleanups) and polls until `left` says nothing is left. */
  async #waitFor(run: Run, left: () => Promise<string | null>): Promise<void> {
    const deadline = this.#ctx.now().getTime() + this.#ctx.actionTimeoutMs;
    for (;;) {
      run.control.checkpoint();
      await settle(this.#ctx);
      const what = await left();
      if (what === null) return;
      if (this.#ctx.now().getTime() > deadline)
        throw new BerthError(
          'unavailable',
          `timed out after ${Math.round(this.#ctx.actionTimeoutMs / 1000)}s waiting for the agents: ${what} (--force does not wait for them)`,
        );
      await run.control.poll();
    }
  }

  /**
   * Whether this run resumes an action another server (or this one before a restart) began: its
   * owner changed since it was accepted, or its log has lines. Then "already gone" is success.
   */
  #resumed(run: Run): boolean {
    return run.work.log.length > 0 || run.work.updated_at !== run.work.created_at;
  }

  /** The service's row; for a resumed destroy whose row and model service are gone, undefined. */
  async #resumableServiceRow(run: Run, path: string): Promise<ServiceRecord | undefined> {
    const row = (await this.#ctx.systems.listServices(run.work.system)).find((r) => r.path === path);
    if (row || !this.#resumed(run)) return this.#serviceRow(run.work.system, path);
    await run.control.note(`service ${path} is already gone`);
    return undefined;
  }

  async #serviceRow(system: string, path: string): Promise<ServiceRecord> {
    const row = (await this.#ctx.systems.listServices(system)).find((r) => r.path === path);
    if (!row) throw new NotFoundError('service', `${path} of system ${system}`);
    if (row.kind !== 'service')
      throw new InvalidArgumentError(
        `Cannot do this to ${path} of system ${system}: it is a job, not a service`,
        { path },
      );
    return row;
  }

  async #rowOfModelService(modelName: string): Promise<ServiceRecord | undefined> {
    for (const s of await this.#ctx.systems.listSystems()) {
      const row = (await this.#ctx.systems.listServices(s.name)).find((r) => r.model_name === modelName);
      if (row?.kind === 'service') return row;
    }
    return undefined;
  }

  /** The containers (instance guids) of a service's instances, or of some indices of it and their sidecars. */
  async #instancesOf(row: ServiceRecord, indices?: readonly number[]): Promise<string[]> {
    const actuals = await this.#ctx.store.listActualLRPs({ domain: systemDomain(row.system) });
    const out: string[] = [];
    for (const a of actuals) {
      if (a.instance_guid === '') continue;
      const sidecarIndex = sidecarUnitIndex(row.process_guid, a.process_guid);
      const own = a.process_guid === row.process_guid || a.process_guid === row.old_process_guid;
      const index = own ? a.index : sidecarIndex;
      if (index === undefined) continue;
      if (indices === undefined || indices.includes(index)) out.push(a.instance_guid);
    }
    return out;
  }

  /** Stops the instance of a removed unit, so its index starts afresh (a gone one is what was wanted). */
  async #retireInstance(row: ServiceRecord, index: number): Promise<void> {
    const { store, log } = this.#ctx;
    const group = await orAbsent(store.getActualLRP({ process_guid: row.process_guid, index }));
    const actual = group?.instance;
    if (!actual) return;
    await store
      .retireActualLRP({ process_guid: row.process_guid, index, expected: actual.modification_tag })
      .catch((err) => {
        // Changed since it was read (restarted, moved): it is a new instance already.
        if (!isSuperseded(err) && !isNotFound(err))
          log('retiring an instance failed', { err: describeError(err) });
      });
  }
}
