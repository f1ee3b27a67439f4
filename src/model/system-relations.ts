import type { ActualLRP } from '../bbs/index.js';
import { NotFoundError } from '../core/index.js';
import { openSecrets } from './definition-secrets.js';
import {
  instanceKey,
  sidecarUnitIndex,
  systemDomain,
  systemLabel,
  systemOfDomain,
  unitOfInstance,
} from './instance-names.js';
import type { ModelView } from './model-types.js';
import { relationEnv, type UnitAddress, type UnitRelationData, unitRelationData } from './relation-data.js';
import { primaries, type SystemsContext } from './systems-context.js';
import { relationEndpoints } from './txn-parts.js';

/** One unit on a cell and what its container is told about its relations. */
export interface CellUnitRelations {
  readonly process_guid: string;
  readonly index: number;
  readonly system: string;
  readonly file: UnitRelationData;
  readonly env: Readonly<Record<string, string>>;
}

/**
 * The relation data of every system unit whose instance runs on a cell: what the cell's rep
 * writes into each container's relations file. Names are system paths (`/db#0`, `/db`).
 */
export async function relationsForCell(ctx: SystemsContext, cellId: string): Promise<CellUnitRelations[]> {
  const out: CellUnitRelations[] = [];
  const view = await ctx.runner.read();
  for (const system of await ctx.systems.listSystems()) {
    const actuals = primaries(await ctx.store.listActualLRPs({ domain: systemDomain(system.name) }));
    if (!actuals.some((a) => a.cell_id === cellId)) continue;
    const relations = relationsOf(system.name, actuals, view);
    for (const a of actuals)
      if (a.cell_id === cellId) {
        const data = relations(a.process_guid, a.index);
        if (data) out.push(data);
      }
  }
  return out;
}

/**
 * One instance's relation data, for a container about to start (its env snapshot), with its
 * service's secrets opened: this is the one way a secret reaches a container, so the BBS never
 * holds its value (docs/systems.md "Secrets").
 */
export async function relationsForInstance(
  ctx: SystemsContext,
  processGuid: string,
  index: number,
): Promise<CellUnitRelations> {
  const desired = await ctx.store.getDesiredLRP({ process_guid: processGuid });
  const system = systemOfDomain(desired.domain);
  const data =
    system === undefined
      ? undefined
      : relationsOf(
          system,
          primaries(await ctx.store.listActualLRPs({ domain: desired.domain })),
          await ctx.runner.read(),
        )(processGuid, index);
  if (!data || system === undefined) throw new NotFoundError('system unit', instanceKey(processGuid, index));
  const secrets = await secretsOfInstance(ctx, system, processGuid);
  return Object.keys(secrets).length === 0 ? data : { ...data, env: { ...data.env, ...secrets } };
}

/** The opened secrets of the service whose DesiredLRP (a version, or a sidecar unit's) is `processGuid`. */
async function secretsOfInstance(
  ctx: SystemsContext,
  system: string,
  processGuid: string,
): Promise<Record<string, string>> {
  for (const row of await ctx.systems.listServices(system)) {
    if (row.kind !== 'service' || !row.spec.secrets) continue;
    const ofRow = (guid: string | null) =>
      guid !== null && (guid === processGuid || sidecarUnitIndex(guid, processGuid) !== undefined);
    // An old version's instance (mid rolling update) starts with the current secrets: only the new spec is kept.
    if (ofRow(row.process_guid) || ofRow(row.old_process_guid)) return openSecrets(row.spec, ctx.secrets?.());
  }
  return {};
}

function relationsOf(
  system: string,
  actuals: readonly ActualLRP[],
  view: ModelView,
): (processGuid: string, index: number) => CellUnitRelations | undefined {
  const placed = new Map<string, UnitAddress>();
  for (const a of actuals) {
    const unit = unitOfInstance(system, a.process_guid, a.index);
    if (unit === undefined || !a.address || a.state !== 'RUNNING') continue;
    // During a rolling update both versions run; either one is a fine address for a peer.
    placed.set(unit, {
      address: a.address,
      ports: Object.fromEntries(a.ports.map((p) => [String(p.container_port), p.host_port])),
    });
  }
  const label = (model: string) => systemLabel(system, model);
  return (processGuid, index) => {
    const unit = unitOfInstance(system, processGuid, index);
    if (unit === undefined) return undefined;
    const data = unitRelationData(view, unit, (u) => placed.get(u));
    const file: UnitRelationData = {
      unit: label(data.unit),
      relations: data.relations.map((r) => ({
        ...r,
        relation: relationEndpoints(r.relation).map(label).join(' '),
        service: label(r.service),
        peers: r.peers.map((p) => ({ ...p, unit: label(p.unit) })),
      })),
    };
    return { process_guid: processGuid, index, system, file, env: relationEnv(file) };
  };
}
