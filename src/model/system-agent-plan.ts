import { type ActualLRP, cellPlacementTag, type DesiredLRP } from '../bbs/index.js';
import { instanceKey, sidecarUnitGuid, sidecarUnitIndex, unitName } from './instance-names.js';
import type { ModelView } from './model-types.js';
import { scopesToEnter } from './relation-rules.js';
import { sidecarsToCreate } from './sidecar-rules.js';
import type { ServiceDefinition } from './system-definition.js';
import { isSidecarRecord, type ServiceRecord, type SystemServiceRecord } from './system-service-record.js';

/**
 * What the system agent reads of one system: its deployed service rows, its instances (primaries,
 * from the BBS), its sidecar units' DesiredLRPs, the model, and the cells that run their own
 * agents. Each stage of the plan reads only the parts it names, from a snapshot taken just
 * before it (a stage sees what the previous one wrote).
 */
export interface SystemAgentSnapshot {
  readonly services: readonly SystemServiceRecord[];
  readonly actuals: readonly ActualLRP[];
  /** The DesiredLRPs of the system's domain. */
  readonly desired: readonly DesiredLRP[];
  readonly view: ModelView;
  /** Cells whose own unit agents act for their units (`model_agent` in their presence). */
  readonly agentCells: ReadonlySet<string>;
}

/** One step of the system agent, applied by `SystemAgent` in its own transaction or BBS call. */
export type SystemAgentAction =
  /** A principal's instance was placed (from null) or runs elsewhere: its unit follows it. */
  | {
      readonly kind: 'place-unit';
      readonly unit: string;
      readonly cell: string;
      readonly from: string | null;
    }
  /** A placed principal without its sidecar unit (its cell runs no agent of its own). */
  | { readonly kind: 'add-sidecar-unit'; readonly principal: string; readonly service: string }
  /** A placed sidecar unit's own DesiredLRP, pinned to its cell; `replace`: pinned elsewhere now. */
  | {
      readonly kind: 'pin-sidecar-lrp';
      readonly process_guid: string;
      readonly spec: ServiceDefinition;
      readonly cell: string;
      readonly replace: boolean;
    }
  /** A placed unit enters the scope of a relation it fits (its cell runs no agent of its own). */
  | { readonly kind: 'enter-scope'; readonly relation: string; readonly unit: string }
  /** A sidecar unit's DesiredLRP whose unit is no longer alive (or gone). */
  | { readonly kind: 'remove-sidecar-lrp'; readonly process_guid: string }
  /** A cell that left the cluster with no units left on it: Dying → Dead → removed. */
  | { readonly kind: 'retire-cell'; readonly cell: string }
  /** Restore: a deployed service's DesiredLRP was removed underneath; desire it again. */
  | { readonly kind: 'restore-lrp'; readonly process_guid: string; readonly spec: ServiceDefinition }
  /** Restore: its instances were changed underneath (`lrp scale`, a restored backup). */
  | { readonly kind: 'restore-instances'; readonly process_guid: string; readonly instances: number }
  /** Restore: an Alive service lacks the unit of an instance index it runs (unit = instance index). */
  | { readonly kind: 'restore-unit'; readonly service: string; readonly index: number };

function serviceRows(services: readonly SystemServiceRecord[]): ServiceRecord[] {
  return services.filter((r): r is ServiceRecord => r.kind === 'service');
}

/**
 * Stage 1. Units follow their instances as the auction places them: an Alive principal unit is
 * assigned to the cell of its instance's first placement, and moved (with its sidecars) once its
 * instance RUNS on another cell.
 */
export function planUnitPlacement(
  s: Pick<SystemAgentSnapshot, 'services' | 'actuals' | 'view'>,
): SystemAgentAction[] {
  const cellOf = new Map<string, string>();
  const runningOn = new Map<string, string>();
  for (const a of s.actuals) {
    if (!a.cell_id) continue;
    cellOf.set(instanceKey(a.process_guid, a.index), a.cell_id);
    if (a.state === 'RUNNING') runningOn.set(instanceKey(a.process_guid, a.index), a.cell_id);
  }
  const out: SystemAgentAction[] = [];
  for (const row of serviceRows(s.services)) {
    if (isSidecarRecord(row)) continue;
    for (const name of s.view.unitsOfService(row.model_name)) {
      const unit = s.view.unit(name);
      if (unit?.life !== 'alive') continue;
      const key = instanceKey(row.process_guid, unit.index);
      const cell = unit.cell_id === null ? cellOf.get(key) : runningOn.get(key);
      if (cell && cell !== unit.cell_id)
        out.push({ kind: 'place-unit', unit: name, cell, from: unit.cell_id });
    }
  }
  return out;
}

/** Whether a unit's cell runs its own unit agent: then the server leaves the unit's side to it. */
function hasOwnAgent(s: Pick<SystemAgentSnapshot, 'view' | 'agentCells'>, unit: string): boolean {
  return s.agentCells.has(s.view.unit(unit)?.cell_id ?? '');
}

/** Stage 2. Placed principals of this system get their sidecar units (the unit agents' side). */
export function planSidecarUnits(
  s: Pick<SystemAgentSnapshot, 'services' | 'view' | 'agentCells'>,
): SystemAgentAction[] {
  const mine = new Set(serviceRows(s.services).map((r) => r.model_name));
  return sidecarsToCreate(s.view)
    .filter((c) => mine.has(c.service) && !hasOwnAgent(s, c.principal))
    .map((c) => ({ kind: 'add-sidecar-unit', principal: c.principal, service: c.service }));
}

/**
 * Stage 3. Each placed Alive sidecar unit has its own one-instance DesiredLRP pinned to its cell;
 * when its principal moved, the LRP pinned to the old cell is replaced by one beside it.
 */
export function planSidecarLRPs(
  s: Pick<SystemAgentSnapshot, 'services' | 'view' | 'desired'>,
): SystemAgentAction[] {
  const desired = new Map(s.desired.map((d) => [d.process_guid, d]));
  const out: SystemAgentAction[] = [];
  for (const row of serviceRows(s.services)) {
    // A pod sidecar runs in its principal's pods: it has no LRPs of its own.
    if (!isSidecarRecord(row) || row.spec.colocate === 'pod') continue;
    for (const name of s.view.unitsOfService(row.model_name, 'alive')) {
      const unit = s.view.unit(name);
      if (!unit || unit.cell_id === null) continue;
      const guid = sidecarUnitGuid(row.process_guid, unit.index);
      const pinned = desired.get(guid);
      const replace = pinned !== undefined && pinned.placement_tags.join() !== cellPlacementTag(unit.cell_id);
      if (pinned && !replace) continue;
      out.push({
        kind: 'pin-sidecar-lrp',
        process_guid: guid,
        spec: { ...row.spec, instances: 1 },
        cell: unit.cell_id,
        replace,
      });
    }
  }
  return out;
}

/** Stage 4. Placed Alive units enter the scopes of the relations they fit (the unit agents' side). */
export function planScopeEntries(
  s: Pick<SystemAgentSnapshot, 'services' | 'view' | 'agentCells'>,
): SystemAgentAction[] {
  const out: SystemAgentAction[] = [];
  for (const row of serviceRows(s.services)) {
    for (const unit of s.view.unitsOfService(row.model_name, 'alive')) {
      if (s.view.unit(unit)?.cell_id === null || hasOwnAgent(s, unit)) continue;
      for (const relation of scopesToEnter(s.view, unit)) out.push({ kind: 'enter-scope', relation, unit });
    }
  }
  return out;
}

/** The pass after a system's reconcile: sidecar LRPs whose unit is no longer Alive go. */
export function planSidecarLRPPruning(
  s: Pick<SystemAgentSnapshot, 'services' | 'view' | 'desired'>,
): SystemAgentAction[] {
  const sidecars = serviceRows(s.services).filter(isSidecarRecord);
  const out: SystemAgentAction[] = [];
  for (const d of s.desired) {
    for (const row of sidecars) {
      const index = sidecarUnitIndex(row.process_guid, d.process_guid);
      if (index === undefined) continue;
      if (s.view.unit(unitName(row.model_name, index))?.life !== 'alive')
        out.push({ kind: 'remove-sidecar-lrp', process_guid: d.process_guid });
      break;
    }
  }
  return out;
}

/**
 * The machine and provisioning agents for cells that left the cluster (no live presence): once
 * their units have moved away, Dying → Dead → removed, so the model does not keep every cell that
 * ever existed and a returning cell id can be added again.
 */
export function planCellRetirement(view: ModelView, liveCells: ReadonlySet<string>): SystemAgentAction[] {
  const out: SystemAgentAction[] = [];
  for (const cell of view.cells()) {
    if (liveCells.has(cell.id) || view.count('units-on-cell', cell.id) > 0) continue;
    out.push({ kind: 'retire-cell', cell: cell.id });
  }
  return out;
}

/**
 * Issue 19 item 2: the system restores its desired state when its records were changed underneath
 * (a restored backup, a write past its actions). One row per fact, read from the deployed service
 * rows, which every action of the system keeps current (a deploy, `service scale`):
 *  - a service's DesiredLRP is gone: desire it again, at the row's count;
 *  - its instance count differs from the row's: set it back;
 *  - its Alive model service lacks the unit of an index below that count: add it (a unit destroyed
 *    by `unit destroy` is replaced once removed; its name is free only then).
 * A row mid rolling update (`old_process_guid`) belongs to its deploy and is left alone; sidecar
 * rows have one LRP per unit, which `planSidecarLRPs` restores.
 */
export function planRestore(
  s: Pick<SystemAgentSnapshot, 'services' | 'desired' | 'view'>,
): SystemAgentAction[] {
  const desired = new Map(s.desired.map((d) => [d.process_guid, d]));
  const out: SystemAgentAction[] = [];
  for (const row of serviceRows(s.services)) {
    if (isSidecarRecord(row) || row.old_process_guid !== null) continue;
    const want = row.spec.instances;
    const lrp = desired.get(row.process_guid);
    if (!lrp) out.push({ kind: 'restore-lrp', process_guid: row.process_guid, spec: row.spec });
    else if (lrp.instances !== want)
      out.push({ kind: 'restore-instances', process_guid: row.process_guid, instances: want });
    if (s.view.service(row.model_name)?.life !== 'alive') continue;
    for (let index = 0; index < want; index++)
      if (!s.view.unit(unitName(row.model_name, index)))
        out.push({ kind: 'restore-unit', service: row.model_name, index });
  }
  return out;
}
