import type { ActualLRP, Task } from '../bbs/index.js';
import { orAbsent } from '../core/index.js';
import { isServiceOf, systemDomain } from './instance-names.js';
import { sidecarInstanceIndex } from './pod-sidecar-instances.js';
import {
  planRollout,
  type RolloutJob,
  type RolloutJobState,
  type RolloutObservation,
  type RolloutProgress,
  type RolloutService,
  type TeardownObservation,
} from './rollout-plan.js';
import type { ActionWork } from './sql-system-store.js';
import type { JobRecord, ServiceRecord, SystemServiceRecord } from './system-service-record.js';
import { primaries, type SystemsContext } from './systems-context.js';
import { containsPath } from './tree-path.js';

/** A service's instances as the rollout planner reads them. */
export function rolloutServiceOf(
  path: string,
  desired: number,
  current: readonly { readonly index: number; readonly actual: ActualLRP }[],
  oldInstances: number,
): RolloutService {
  return {
    path,
    desired,
    instances: current.map(({ index, actual }) => ({
      index,
      state: actual.state,
      crash_count: actual.crash_count,
      crash_reason: actual.crash_reason,
      placement_error: actual.placement_error,
    })),
    old_instances: oldInstances,
  };
}

/**
 * A service row's instances: its current DesiredLRP's (a sidecar's: its units' own LRPs, indexed
 * by unit), and how many of an older version are left.
 */
function observeService(
  row: ServiceRecord,
  rows: readonly SystemServiceRecord[],
  actuals: readonly ActualLRP[],
) {
  const spec = row.spec;
  if (spec.subordinate_to === undefined) {
    const current = actuals.filter((a) => a.process_guid === row.process_guid);
    const old =
      row.old_process_guid === null ? [] : actuals.filter((a) => a.process_guid === row.old_process_guid);
    return rolloutServiceOf(
      row.path,
      spec.instances,
      current.map((actual) => ({ index: actual.index, actual })),
      old.length,
    );
  }
  const principal = rows.find((r) => r.path === spec.subordinate_to);
  const desired = principal?.kind === 'service' ? principal.spec.instances : 0;
  const current = actuals.flatMap((actual) => {
    const index = sidecarInstanceIndex(row, principal, actual);
    return index === undefined ? [] : [{ index, actual }];
  });
  return rolloutServiceOf(row.path, desired, current, 0);
}

/** A job's state: its task's while the BBS has it, else the outcome recorded at its version. */
export function jobState(
  task: Task | undefined,
  outcome: string | undefined,
): { state: RolloutJobState; reason: string } {
  if (task && (task.state === 'COMPLETED' || task.state === 'RESOLVING'))
    return task.failed
      ? { state: 'failed', reason: task.failure_reason }
      : { state: 'completed', reason: '' };
  if (task) return { state: task.state === 'RUNNING' ? 'running' : 'pending', reason: '' };
  if (outcome === 'completed') return { state: 'completed', reason: '' };
  if (outcome?.startsWith('failed: ')) return { state: 'failed', reason: outcome.slice('failed: '.length) };
  return { state: 'gone', reason: '' };
}

/** The outcome text `recordJobOutcome` stores for a job state. */
export function jobOutcomeText(job: RolloutJob): string {
  return job.state === 'failed' ? `failed: ${job.reason}` : job.state === 'completed' ? 'completed' : '';
}

export interface ObservedRollout {
  readonly observation: RolloutObservation;
  /** Jobs whose task ended and whose outcome is not recorded yet: the waiting loop records them. */
  readonly unrecorded: readonly { readonly job: RolloutJob; readonly version: string }[];
}

/** Reads what the rollout planner decides from: the services and jobs under the action's path. */
export async function observeRollout(ctx: SystemsContext, work: ActionWork): Promise<ObservedRollout> {
  const { store, systems } = ctx;
  const all = await systems.listServices(work.system);
  const rows = all.filter((r) => containsPath(work.path, r.path));
  const actuals = primaries(await store.listActualLRPs({ domain: systemDomain(work.system) }));
  const outcomes = await systems.jobOutcomes(work.system);
  const services: RolloutService[] = [];
  const jobs: RolloutJob[] = [];
  const unrecorded: { job: RolloutJob; version: string }[] = [];
  for (const row of rows) {
    if (row.kind === 'service') {
      services.push(observeService(row, all, actuals));
      continue;
    }
    const job = await observeJob(ctx, row, outcomes.get(row.path));
    jobs.push(job);
    if (!outcomes.has(row.path) && jobOutcomeText(job) !== '') unrecorded.push({ job, version: row.version });
  }
  return {
    observation: {
      services,
      jobs,
      started_ms: Date.parse(work.created_at),
      timeout_ms: work.timeout_ms,
      now_ms: ctx.now().getTime(),
    },
    unrecorded,
  };
}

async function observeJob(
  ctx: SystemsContext,
  row: JobRecord,
  outcome: string | undefined,
): Promise<RolloutJob> {
  const task = await orAbsent(ctx.store.getTask({ task_guid: row.process_guid }));
  return { path: row.path, ...jobState(task, outcome) };
}

/** What of the system is left, for the teardown planner. */
export async function observeTeardown(ctx: SystemsContext, work: ActionWork): Promise<TeardownObservation> {
  const { store, runner } = ctx;
  const domain = systemDomain(work.system);
  const view = await runner.read();
  return {
    services: [...view.services()].filter((s) => isServiceOf(work.system, s.name)).length,
    desired_lrps: (await store.listDesiredLRPs({ domain })).length,
    instances: (await store.listActualLRPs({ domain })).length,
    tasks: (await store.listTasks({ domain })).length,
    started_ms: Date.parse(work.created_at),
    timeout_ms: work.timeout_ms,
    now_ms: ctx.now().getTime(),
  };
}

/** How far a live action got: a deploy's services, instances and jobs; a teardown's remains. */
export type ActionProgress =
  | ({ readonly kind: 'deploy' } & RolloutProgress)
  | ({ readonly kind: 'teardown' } & Pick<
      TeardownObservation,
      'services' | 'desired_lrps' | 'instances' | 'tasks'
    >);

export async function actionProgress(ctx: SystemsContext, work: ActionWork): Promise<ActionProgress> {
  if (work.kind === 'teardown') {
    const { services, desired_lrps, instances, tasks } = await observeTeardown(ctx, work);
    return { kind: 'teardown', services, desired_lrps, instances, tasks };
  }
  return { kind: 'deploy', ...planRollout((await observeRollout(ctx, work)).observation).progress };
}
