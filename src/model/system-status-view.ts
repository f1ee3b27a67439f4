import type { ActualLRP, Task } from '../bbs/index.js';
import { NotFoundError, orAbsent } from '../core/index.js';
import { isServiceOf, sidecarUnitIndex, systemDomain, systemLabel, unitLabel } from './instance-names.js';
import type { ModelView } from './model-types.js';
import { sidecarInstanceIndex } from './pod-sidecar-instances.js';
import { jobState } from './rollout-observe.js';
import type { ActionRecord } from './sql-system-store.js';
import type { JobRecord, ServiceRecord, SystemServiceRecord } from './system-service-record.js';
import { type ServiceState, serviceState, systemStatus } from './system-status.js';
import { primaries, type SystemsContext } from './systems-context.js';

export interface UnitStatus {
  readonly index: number;
  readonly name: string;
  readonly life: string;
  readonly state: string;
  readonly cell_id: string | null;
  /** A sidecar's principal unit (`/web/api#0`), null for principals. */
  readonly principal: string | null;
  /** The container the unit runs in now (its ActualLRP's instance guid: the history's id), if placed. */
  readonly instance_guid: string | null;
}

export interface ServiceStatus {
  readonly path: string;
  readonly kind: 'service' | 'job';
  readonly state: ServiceState | string;
  /** Why a job failed. */
  readonly reason?: string;
  readonly life: string;
  readonly version: string;
  readonly process_guid: string;
  readonly sidecar_of: string | null;
  readonly units: readonly UnitStatus[];
}

export interface RelationStatus {
  readonly endpoints: readonly [string, string];
  readonly kind: 'global' | 'container';
  readonly life: string;
  /** The units in the relation's scope. */
  readonly scope: readonly string[];
}

export interface SystemStatusJson {
  readonly name: string;
  readonly state: string;
  readonly reason?: string;
  readonly phase: string;
  readonly actions: readonly ActionRecord[];
  readonly services: readonly ServiceStatus[];
  readonly relations: readonly RelationStatus[];
}

/**
 * `GET /v1/systems` and `GET /v1/systems/{name}`: a system's rows, instances and model entities
 * assembled into what the API shows; the states come from `system-status.ts`'s tables.
 */
export class SystemStatusView {
  readonly #ctx: SystemsContext;

  constructor(ctx: SystemsContext) {
    this.#ctx = ctx;
  }

  async listSystems(): Promise<{ name: string; state: string; reason?: string }[]> {
    const out: { name: string; state: string; reason?: string }[] = [];
    for (const s of await this.#ctx.systems.listSystems()) {
      // A system whose teardown ended since the list was read is gone, not an error.
      const status = await orAbsent(this.status(s.name));
      if (status)
        out.push({ name: s.name, state: status.state, ...(status.reason ? { reason: status.reason } : {}) });
    }
    return out;
  }

  async status(name: string): Promise<SystemStatusJson> {
    const { store, systems, runner } = this.#ctx;
    const system = await systems.getSystem(name);
    if (!system) throw new NotFoundError('system', name);
    const rows = await systems.listServices(name);
    const actuals = primaries(await store.listActualLRPs({ domain: systemDomain(name) }));
    const view = await runner.read();
    const services: ServiceStatus[] = [];
    const states: ServiceState[] = [];
    const outcomes = await systems.jobOutcomes(name);
    for (const row of rows) {
      if (row.kind === 'job') {
        const task = await orAbsent(store.getTask({ task_guid: row.process_guid }));
        services.push(jobStatus(row, task, outcomes.get(row.path)));
        continue;
      }
      const service = serviceStatus(name, row, rows, actuals, view);
      states.push(service.state);
      services.push(service);
    }
    const relations: RelationStatus[] = [];
    for (const r of view.relations()) {
      if (!r.endpoints.every((e) => isServiceOf(name, e))) continue;
      relations.push({
        endpoints: [systemLabel(name, r.endpoints[0]), systemLabel(name, r.endpoints[1])],
        kind: r.scope,
        life: r.life,
        scope: [...view.unitsInScope(r.id)].map((u) => unitLabel(name, u)).sort(),
      });
    }
    const status = systemStatus({
      phase: system.phase,
      ...(system.reason ? { failure_reason: system.reason } : {}),
      services: states,
    });
    return {
      name,
      state: status.state,
      ...(status.reason ? { reason: status.reason } : system.reason ? { reason: system.reason } : {}),
      phase: system.phase,
      actions: await systems.runningActions(name),
      services,
      relations,
    };
  }
}

/**
 * A job's state: its task's while the BBS has it (pending, running, completed, failed with the
 * task's reason); once the task is deleted, the outcome its deploy recorded. `gone` only when the
 * task went before anyone saw how it ended.
 */
function jobStatus(row: JobRecord, task: Task | undefined, outcome: string | undefined): ServiceStatus {
  const { state, reason } = jobState(task, outcome);
  const seen = reason === '' ? { state } : { state, reason };
  return {
    path: row.path,
    kind: 'job',
    ...seen,
    life: 'alive',
    version: row.version,
    process_guid: row.process_guid,
    sidecar_of: null,
    units: [],
  };
}

function serviceStatus(
  system: string,
  row: ServiceRecord,
  rows: readonly SystemServiceRecord[],
  actuals: readonly ActualLRP[],
  view: ModelView,
): ServiceStatus & { readonly state: ServiceState } {
  const spec = row.spec;
  const sidecar = spec.subordinate_to !== undefined;
  // A sidecar's instances are its units' own LRPs (`<guid>.uN`): the unit index is in the guid.
  const principal = sidecar ? rows.find((r) => r.path === spec.subordinate_to) : undefined;
  const indexOf = (a: ActualLRP): number | undefined => {
    if (!sidecar)
      return a.process_guid === row.process_guid || a.process_guid === row.old_process_guid
        ? a.index
        : undefined;
    return (
      sidecarInstanceIndex(row, principal, a) ??
      (row.old_process_guid === null ? undefined : sidecarUnitIndex(row.old_process_guid, a.process_guid))
    );
  };
  const isCurrent = (a: ActualLRP) =>
    a.process_guid === row.process_guid || sidecarInstanceIndex(row, principal, a) !== undefined;
  const mine = actuals.flatMap((a) => {
    const index = indexOf(a);
    return index === undefined ? [] : [{ actual: a, index, version: isCurrent(a) ? row.version : 'old' }];
  });
  const svc = view.service(row.model_name);
  const desired = sidecar ? (principal?.kind === 'service' ? principal.spec.instances : 0) : spec.instances;
  const state = serviceState({
    life: svc?.life ?? 'alive',
    desired_instances: desired,
    current_version: row.version,
    instances: mine.map((m) => ({
      index: m.index,
      version: m.version,
      state: m.actual.state,
      crash_count: m.actual.crash_count,
    })),
  });
  const units: UnitStatus[] = [...view.unitsOfService(row.model_name)]
    .flatMap((u) => view.unit(u) ?? [])
    .sort((a, b) => a.index - b.index)
    .map((u) => {
      const actual = (
        mine.find((m) => m.index === u.index && m.version === row.version) ??
        mine.find((m) => m.index === u.index)
      )?.actual;
      return {
        index: u.index,
        name: unitLabel(system, u.name),
        life: u.life,
        state: actual?.state ?? 'UNPLACED',
        cell_id: u.cell_id ?? (actual?.cell_id || null),
        principal: u.principal ? unitLabel(system, u.principal) : null,
        instance_guid: actual?.instance_guid || null,
      };
    });
  return {
    path: row.path,
    kind: 'service',
    state,
    life: svc?.life ?? 'removed',
    version: row.version,
    process_guid: row.process_guid,
    sidecar_of: spec.subordinate_to ?? null,
    units,
  };
}
