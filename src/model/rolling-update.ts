import { BerthError, orAbsent } from '../core/index.js';
import type { ActionControl } from './action-runner.js';
import { nextRecreateStep, nextRollingStep } from './deploy-plan.js';
import { modelServiceName, serviceProcessGuid, sidecarUnitIndex, systemDomain } from './instance-names.js';
import { rolloutServiceOf } from './rollout-observe.js';
import { serviceProblem } from './rollout-plan.js';
import { ensureUnits } from './service-model-writes.js';
import { keepsData } from './service-volumes.js';
import type { ServiceDefinition } from './system-definition.js';
import type { ServiceRecord } from './system-service-record.js';
import { ensureDesiredLRP, primaries, removeDesiredLRP, type SystemsContext } from './systems-context.js';

/**
 * Seed 004 / issue 8: a new DesiredLRP version whose instances must be RUNNING before old ones
 * stop, stepped by `nextRollingStep`. The old version shrinks from the top (the BBS retires the
 * highest indices when its instance count drops), so a non-RUNNING old instance at a low index
 * waits for its turn instead of being stopped first.
 */
export async function rollingUpdate(
  ctx: SystemsContext,
  control: ActionControl,
  row: ServiceRecord,
  spec: ServiceDefinition,
  version: string,
  /** The action's deadline (its acceptance + its timeout). */
  deadlineMs: number,
): Promise<void> {
  const { store, systems } = ctx;
  const system = row.system;
  const newGuid = serviceProcessGuid(system, spec.path, version);
  const oldGuid = row.old_process_guid ?? row.process_guid;
  if (spec.subordinate_to !== undefined) {
    // Sidecar units each have their own pinned DesiredLRP: replace them; reconcile recreates them at the new version.
    for (const d of await store.listDesiredLRPs({ domain: systemDomain(system) })) {
      if (sidecarUnitIndex(oldGuid, d.process_guid) !== undefined)
        await removeDesiredLRP(store, d.process_guid);
    }
    await systems.putService({ ...row, spec, version, process_guid: newGuid, old_process_guid: null });
    await control.note(`rolled sidecar ${spec.path} to ${version}`);
    return;
  }
  await systems.putService({ ...row, spec, version, process_guid: newGuid, old_process_guid: oldGuid });
  // A service that keeps data rolls stop-first: its new version starts once the old one is gone.
  const stopFirst = keepsData(spec);
  await ensureDesiredLRP(store, newGuid, spec, stopFirst ? 0 : Math.min(1, spec.instances), system, []);
  await control.note(
    `rolling ${spec.path} from ${oldGuid} to ${newGuid}${stopFirst ? ' (stop-first: it keeps data in volumes)' : ''}`,
  );
  for (;;) {
    control.checkpoint();
    const oldActuals = primaries(await store.listActualLRPs({ process_guid: oldGuid }));
    const newActuals = primaries(await store.listActualLRPs({ process_guid: newGuid }));
    const step = (stopFirst ? nextRecreateStep : nextRollingStep)(oldActuals, newActuals, spec.instances);
    const current = await store.getDesiredLRP({ process_guid: newGuid });
    if (current.instances !== step.new_instances)
      await store.updateDesiredLRP({ process_guid: newGuid, update: { instances: step.new_instances } });
    // Absent once a resumed update has already removed the old version.
    const oldDesired = await orAbsent(store.getDesiredLRP({ process_guid: oldGuid }));
    // An old instance already retired (index past the count) stays listed until its cell stops it; count it once.
    const toStop = step.stop_old.filter((i) => i < (oldDesired?.instances ?? 0)).length;
    if (oldDesired && toStop > 0) {
      const keep = Math.max(0, oldDesired.instances - toStop);
      if (keep < oldDesired.instances)
        await store.updateDesiredLRP({ process_guid: oldGuid, update: { instances: keep } });
    }
    const running = newActuals.filter((i) => i.state === 'RUNNING').length;
    if (step.done || (oldDesired?.instances === 0 && running >= spec.instances)) break;
    if (ctx.now().getTime() >= deadlineMs) {
      const seen = rolloutServiceOf(
        spec.path,
        spec.instances,
        newActuals.map((actual) => ({ index: actual.index, actual })),
        oldActuals.length,
      );
      throw new BerthError('unavailable', `rolling update not done in time: ${serviceProblem(seen)}`);
    }
    await control.poll();
  }
  await removeDesiredLRP(store, oldGuid);
  await ensureUnits(ctx, modelServiceName(system, spec.path), spec.instances);
  await systems.putService({ ...row, spec, version, process_guid: newGuid, old_process_guid: null });
  await control.note(`rolled ${spec.path} to ${newGuid}`);
}
