import { cellPlacementTag } from '../bbs/index.js';
import { describeError, isSuperseded, orAbsent } from '../core/index.js';
import {
  addCell,
  assignUnitToCell,
  destroyCell,
  ensureCellDead,
  moveUnitToCell,
  removeCell,
} from './cell-rules.js';
import { systemDomain, unitName } from './instance-names.js';
import { runTxn } from './model-txn-runner.js';
import type { ModelView } from './model-types.js';
import { enterScope } from './relation-rules.js';
import { addSidecarUnit } from './sidecar-rules.js';
import {
  planCellRetirement,
  planRestore,
  planScopeEntries,
  planSidecarLRPPruning,
  planSidecarLRPs,
  planSidecarUnits,
  planUnitPlacement,
  type SystemAgentAction,
} from './system-agent-plan.js';
import { isSidecarRecord } from './system-service-record.js';
import {
  agentCells,
  ensureDesiredLRP,
  primaries,
  removeDesiredLRP,
  type SystemsContext,
} from './systems-context.js';
import { addUnit } from './unit-rules.js';

/**
 * The unit agents' side for every system, run by the server: fetch a snapshot, plan with the pure
 * stages of `system-agent-plan.ts`, apply each action in its own transaction or BBS call. A stage
 * reads a fresh model, so it sees what the stage before it wrote.
 */
export class SystemAgent {
  readonly #ctx: SystemsContext;

  constructor(ctx: SystemsContext) {
    this.#ctx = ctx;
  }

  /**
   * The periodic pass over every system no action is running on (a running deploy or teardown
   * reconciles its own system), then the retirement of cells that left. A system's failure is
   * logged and the others still run; the next pass retries it.
   */
  async reconcileAll(): Promise<void> {
    const { systems, log } = this.#ctx;
    for (const s of await systems.listSystems()) {
      if ((await systems.runningActions(s.name)).length > 0) continue;
      try {
        await this.reconcile(s.name);
        await this.#pruneSidecarLRPs(s.name);
      } catch (err) {
        log('system agent pass failed', { system: s.name, err: describeError(err) });
      }
    }
    await this.#retireGoneCells().catch((err) => log('retiring cells failed', { err: describeError(err) }));
  }

  /**
   * What the unit agents would do for a system's units, from the BBS: an instance placed on a cell
   * assigns its unit there, an assigned principal gets its sidecar unit (and the sidecar's own
   * DesiredLRP pinned to that cell), and assigned units enter the scopes of their relations.
   */
  async reconcile(system: string): Promise<void> {
    const { store, systems, runner } = this.#ctx;
    const services = await systems.listServices(system);
    await this.apply(
      system,
      planRestore({ services, desired: await this.#desired(system), view: await runner.read() }),
    );
    const actuals = primaries(await store.listActualLRPs({ domain: systemDomain(system) }));
    await this.apply(system, planUnitPlacement({ services, actuals, view: await runner.read() }));
    const cells = await agentCells(store);
    await this.apply(system, planSidecarUnits({ services, view: await runner.read(), agentCells: cells }));
    const view = await runner.read();
    const desired = await this.#desired(system);
    await this.apply(system, planSidecarLRPs({ services, view, desired }));
    await this.apply(system, planScopeEntries({ services, view, agentCells: cells }));
  }

  async #pruneSidecarLRPs(system: string): Promise<void> {
    const services = await this.#ctx.systems.listServices(system);
    if (!services.some(isSidecarRecord)) return;
    const view = await this.#ctx.runner.read();
    await this.apply(system, planSidecarLRPPruning({ services, view, desired: await this.#desired(system) }));
  }

  async #retireGoneCells(): Promise<void> {
    const view = await this.#ctx.runner.read();
    // The model's cells are those that hosted units; a cluster without systems has none, and its
    // every live cell (a thousand rows, every pass) need not be read to retire nothing.
    if (Array.from(view.cells()).length === 0) return;
    const live = new Set((await this.#ctx.store.listCells()).map((c) => c.cell_id));
    await this.apply('', planCellRetirement(view, live));
  }

  async #desired(system: string) {
    return this.#ctx.store.listDesiredLRPs({ domain: systemDomain(system) });
  }

  /** Applies actions in order; a failure the action does not absorb ends the system's pass. */
  async apply(system: string, actions: readonly SystemAgentAction[]): Promise<void> {
    for (const action of actions) await this.#applyOne(system, action);
  }

  async #applyOne(system: string, action: SystemAgentAction): Promise<void> {
    const { store, runner, log } = this.#ctx;
    switch (action.kind) {
      case 'place-unit': {
        const { unit, cell } = action;
        await runTxn(runner, (v) => (v.cell(cell) ? null : addCell(v, cell)));
        // One unit's failed move must not hold up the others: logged, retried on the next pass.
        await runTxn(runner, (v) => {
          const now = v.unit(unit);
          if (v.cell(cell)?.life !== 'alive' || now?.life !== 'alive') return null;
          return now.cell_id === null ? assignUnitToCell(v, unit, cell) : moveUnitToCell(v, unit, cell);
        }).catch((err) => log('assign failed', { unit, err: describeError(err) }));
        return;
      }
      case 'add-sidecar-unit': {
        const { principal, service } = action;
        // As for a placement: logged, and the next pass retries this principal.
        await runTxn(runner, (v) =>
          inSystemView(v, principal, service) ? addSidecarUnit(v, principal, service) : null,
        ).catch((err) => log('sidecar failed', { principal, err: describeError(err) }));
        return;
      }
      case 'pin-sidecar-lrp':
        if (action.replace) await removeDesiredLRP(store, action.process_guid);
        await ensureDesiredLRP(store, action.process_guid, action.spec, 1, system, [
          cellPlacementTag(action.cell),
        ]);
        return;
      case 'enter-scope':
        await runTxn(runner, (v) => enterScope(v, action.relation, action.unit)).catch((err) => {
          // A unit that left, or a relation that began dying, since the plan was read: nothing to
          // enter any more. Anything else is worth a line; the next pass retries it either way.
          if (!isSuperseded(err)) log('entering scope failed', { ...action, err: describeError(err) });
        });
        return;
      case 'remove-sidecar-lrp':
        await removeDesiredLRP(store, action.process_guid);
        return;
      case 'restore-lrp':
        log('restoring a removed DesiredLRP', { system, process_guid: action.process_guid });
        await ensureDesiredLRP(store, action.process_guid, action.spec, action.spec.instances, system, []);
        return;
      case 'restore-instances':
        log('restoring instances', {
          system,
          process_guid: action.process_guid,
          instances: action.instances,
        });
        await orAbsent(
          store.updateDesiredLRP({
            process_guid: action.process_guid,
            update: { instances: action.instances },
          }),
        );
        return;
      case 'restore-unit': {
        const { service, index } = action;
        await runTxn(runner, (v) =>
          v.service(service)?.life === 'alive' && !v.unit(unitName(service, index))
            ? addUnit(v, service, index)
            : null,
        );
        return;
      }
      case 'retire-cell': {
        const id = action.cell;
        await runTxn(runner, (v) => (v.cell(id)?.life === 'alive' ? destroyCell(v, id) : null));
        await runTxn(runner, (v) => (v.cell(id)?.life === 'dying' ? ensureCellDead(v, id) : null));
        await runTxn(runner, (v) => (v.cell(id)?.life === 'dead' ? removeCell(v, id) : null));
        return;
      }
    }
  }
}

function inSystemView(v: ModelView, principal: string, service: string): boolean {
  return v.unit(principal)?.life === 'alive' && v.service(service)?.life === 'alive';
}
