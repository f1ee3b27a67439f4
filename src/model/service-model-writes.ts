import { BerthError } from '../core/index.js';
import type { ActionControl } from './action-runner.js';
import { modelServiceName, unitName } from './instance-names.js';
import { runTxn } from './model-txn-runner.js';
import { addRelation } from './relation-rules.js';
import { addService } from './service-rules.js';
import type { ServiceDefinition } from './system-definition.js';
import { type SystemsContext, settle } from './systems-context.js';
import { relationId } from './txn-parts.js';
import { addUnit, destroyUnit } from './unit-rules.js';

// The model side of a deploy: each step reads what exists and writes only what is missing, so a
// deploy resumed after a crash runs them again from the start.

/** The model service of a system service (and a sidecar's container relation to its principal). */
export async function ensureModelService(
  ctx: SystemsContext,
  control: ActionControl,
  name: string,
  spec: ServiceDefinition,
  system: string,
): Promise<void> {
  const subordinate = spec.subordinate_to !== undefined;
  await waitRemoved(ctx, control, name);
  await runTxn(ctx.runner, (v) => (v.service(name) ? null : addService(v, name, { subordinate })));
  if (spec.subordinate_to !== undefined) {
    const principal = modelServiceName(system, spec.subordinate_to);
    await runTxn(ctx.runner, (v) =>
      v.relation(relationId(principal, name)) ? null : addRelation(v, principal, name, 'container'),
    );
  }
}

/** A name cannot be reused until the old entity is removed: settle until a Dying one is gone. */
async function waitRemoved(ctx: SystemsContext, control: ActionControl, name: string): Promise<void> {
  const deadline = ctx.now().getTime() + ctx.actionTimeoutMs;
  for (;;) {
    const view = await ctx.runner.read();
    if (view.service(name)?.life !== 'dying') return;
    await settle(ctx);
    if (ctx.now().getTime() > deadline)
      throw new BerthError('unavailable', `service ${name} is still being removed`);
    if ((await ctx.runner.read()).service(name)?.life === 'dying') await control.poll();
  }
}

/** Units 0..n-1 Alive; higher indices destroyed (unit = instance index). */
export async function ensureUnits(ctx: SystemsContext, name: string, instances: number): Promise<void> {
  const view = await ctx.runner.read();
  const existing = [...view.unitsOfService(name)].flatMap((u) => view.unit(u) ?? []);
  for (const u of existing) {
    if (u.index >= instances && u.life === 'alive')
      await runTxn(ctx.runner, (v) =>
        v.unit(u.name)?.life === 'alive' ? destroyUnit(v, u.name, ctx.now()) : null,
      );
  }
  if (existing.some((u) => u.index < instances && u.life !== 'alive')) await settle(ctx);
  for (let i = 0; i < instances; i++) {
    await runTxn(ctx.runner, (v) =>
      v.unit(unitName(name, i)) || v.service(name)?.life !== 'alive' ? null : addUnit(v, name, i),
    );
  }
}
