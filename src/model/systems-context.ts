import type { ActualLRP, BbsStore, DesiredLRPDefinition } from '../bbs/index.js';
import { isBerthError, isNotFound, orAbsent } from '../core/index.js';
import type { DeployerLog } from './action-runner.js';
import { systemDomain } from './instance-names.js';
import { settleModel } from './model-settler.js';
import type { SecretBox } from './secret-box.js';
import { desiredVolumes } from './service-volumes.js';
import type { SqlModelTxnRunner } from './sql-model-txn-runner.js';
import type { SqlSystemStore } from './sql-system-store.js';
import type { ServiceDefinition } from './system-definition.js';

/** What the deploy executor, the system agent and the views share: the stores, the clock, the log. */
export interface SystemsContext {
  readonly store: BbsStore;
  readonly systems: SqlSystemStore;
  readonly runner: SqlModelTxnRunner;
  readonly now: () => Date;
  readonly log: DeployerLog;
  /** How long a rolling update or teardown waits for instances before it fails. */
  readonly actionTimeoutMs: number;
  /** The server's secret box, its key made on first use; undefined when the server keeps no secrets. */
  readonly secrets?: () => SecretBox;
}

/** The instances that count: an evacuating copy is on its way out. */
export function primaries(actuals: readonly ActualLRP[]): ActualLRP[] {
  return actuals.filter((a) => !a.evacuating);
}

/**
 * Live cells that run the unit and machine agents for their own units (their presence says
 * `model_agent`): the server's settle and reconcile leave those units to them, and takes over
 * again once a cell's presence is gone (killed, drained, partitioned for longer than its TTL).
 */
export async function agentCells(store: BbsStore): Promise<ReadonlySet<string>> {
  return new Set((await store.listCells()).filter((c) => c.model_agent === true).map((c) => c.cell_id));
}

/** One settle pass of the model; its per-entity errors are logged, the next pass retries them. */
export async function settle(ctx: SystemsContext): Promise<void> {
  const report = await settleModel(ctx.runner, { now: ctx.now(), agentCells: await agentCells(ctx.store) });
  if (report.errors.length > 0) ctx.log('model settle errors', { errors: report.errors.map(String) });
}

/** The DesiredLRP of a service version (or a sidecar unit), unless it exists already. */
export async function ensureDesiredLRP(
  store: BbsStore,
  guid: string,
  spec: ServiceDefinition,
  instances: number,
  system: string,
  placementTags: readonly string[],
): Promise<void> {
  if (await orAbsent(store.getDesiredLRP({ process_guid: guid }))) return;
  const def: DesiredLRPDefinition = {
    process_guid: guid,
    domain: systemDomain(system),
    instances,
    image: spec.image,
    ...(spec.command ? { command: spec.command } : {}),
    env: spec.env,
    memory_mb: spec.memory_mb,
    disk_mb: spec.disk_mb,
    ports: spec.ports,
    routes: spec.routes,
    annotation: spec.annotation,
    ...(spec.monitor ? { monitor: spec.monitor } : {}),
    start_timeout_s: 60,
    placement_tags: placementTags,
    ...(spec.volumes ? { volumes: desiredVolumes(spec.path, spec.volumes) } : {}),
    ...(spec.pod_sidecars ? { sidecars: spec.pod_sidecars } : {}),
  };
  await store.desireLRP(def).catch(ignoreAlreadyExists);
}

/** Removes a DesiredLRP; one already gone is what was wanted. */
export async function removeDesiredLRP(store: BbsStore, guid: string): Promise<void> {
  await orAbsent(store.removeDesiredLRP({ process_guid: guid }));
}

/** Cancels, resolves and deletes a job's task, whatever state it is in; a gone task is done. */
export async function removeTask(store: BbsStore, guid: string): Promise<void> {
  try {
    let task = await store.getTask({ task_guid: guid });
    if (task.state === 'PENDING' || task.state === 'RUNNING')
      task = await store.cancelTask({ task_guid: guid });
    if (task.state === 'COMPLETED')
      task = await store.resolvingTask({ task_guid: guid, expected: task.modification_tag });
    if (task.state === 'RESOLVING')
      await store.deleteTask({ task_guid: guid, expected: task.modification_tag });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** For a create: another pass (a resumed action) created it first, with the same guid and spec. */
export function ignoreAlreadyExists(err: unknown): void {
  if (isBerthError(err) && err.code === 'already_exists') return;
  throw err;
}
