import type { ActualLRPState } from '../bbs/index.js';
import { formatDuration } from '../core/index.js';

/** One instance of a service's new version, as the BBS shows it. */
export interface RolloutInstance {
  readonly index: number;
  readonly state: ActualLRPState;
  readonly crash_count: number;
  readonly crash_reason: string;
  readonly placement_error: string;
}

/** A service under the deploy's path: what it should run and what runs. */
export interface RolloutService {
  readonly path: string;
  /** Instances wanted at the new version (a sidecar: one per principal unit). */
  readonly desired: number;
  /** The new version's instances (evacuating copies left out). */
  readonly instances: readonly RolloutInstance[];
  /** Instances of older versions still present (a rolling update not yet finished). */
  readonly old_instances: number;
}

export type RolloutJobState = 'pending' | 'running' | 'completed' | 'failed' | 'gone';

export interface RolloutJob {
  readonly path: string;
  readonly state: RolloutJobState;
  /** Why it failed (state `failed`). */
  readonly reason: string;
}

export interface RolloutObservation {
  readonly services: readonly RolloutService[];
  readonly jobs: readonly RolloutJob[];
  /** When the action was accepted: its timeout counts from there, across server restarts. */
  readonly started_ms: number;
  readonly timeout_ms: number;
  readonly now_ms: number;
  /**
   * The last telling problem (placement error, crash loop) seen of each service in earlier rounds:
   * an instance given back for a missing image is claimed again (its error cleared) before it is
   * given back again, and the reason must not depend on which moment the timeout falls on.
   */
  readonly remembered?: Readonly<Record<string, string>>;
}

/** What `berth deploy --wait` shows. */
export interface RolloutProgress {
  readonly services_ready: number;
  readonly services_desired: number;
  readonly instances_ready: number;
  readonly instances_desired: number;
  readonly jobs_completed: number;
  readonly jobs_desired: number;
  /** One line per service or job not yet done, naming it and what it waits for. */
  readonly waiting_on: readonly string[];
}

export type RolloutVerdict =
  | { readonly kind: 'rolled-out'; readonly progress: RolloutProgress }
  | { readonly kind: 'waiting'; readonly progress: RolloutProgress }
  | { readonly kind: 'failed'; readonly reason: string; readonly progress: RolloutProgress };

function runningCount(s: RolloutService): number {
  return s.instances.filter((i) => i.state === 'RUNNING' && i.index < s.desired).length;
}

/**
 * A service is rolled out when exactly its desired instances run its new version (RUNNING means
 * the monitor passed: the executor reports RUNNING only then) and no older instance is left.
 */
export function serviceRolledOut(s: RolloutService): boolean {
  return runningCount(s) === s.desired && s.instances.length === s.desired && s.old_instances === 0;
}

/**
 * Why a service is not rolled out, most telling first: an instance that cannot be placed (the
 * cell's or auctioneer's reason: no room, the image not found), a crash loop with its last exit,
 * else how far it got.
 */
export function serviceProblem(s: RolloutService, remembered?: string): string {
  const telling = tellingProblem(s) ?? remembered;
  if (telling !== undefined) return telling;
  const old = s.old_instances > 0 ? `, ${s.old_instances} of the old version left` : '';
  return `${s.path}: ${runningCount(s)}/${s.desired} instances running${old}`;
}

/** A placement error or a crash loop of a service, if it shows one now. */
function tellingProblem(s: RolloutService): string | undefined {
  const unplaced = s.instances.find((i) => i.placement_error !== '' && i.state !== 'RUNNING');
  if (unplaced) return `${s.path}: instance ${unplaced.index} cannot be placed: ${unplaced.placement_error}`;
  const crashing = s.instances
    .filter((i) => i.state === 'CRASHED' || (i.state !== 'RUNNING' && i.crash_count > 0))
    .sort((a, b) => b.crash_count - a.crash_count)[0];
  if (crashing)
    return `${s.path}: crash loop: instance ${crashing.index} crashed ${crashing.crash_count} time(s), last: ${crashing.crash_reason || 'no reason recorded'}`;
  return undefined;
}

/** This round's telling problems over the remembered ones: the next round's `remembered`. */
export function rememberProblems(o: RolloutObservation): Record<string, string> {
  const out: Record<string, string> = { ...o.remembered };
  for (const s of o.services) {
    const telling = tellingProblem(s);
    if (telling !== undefined) out[s.path] = telling;
  }
  return out;
}

function jobProblem(j: RolloutJob): string {
  return j.state === 'failed' ? `job ${j.path} failed: ${j.reason}` : `job ${j.path} ${j.state}`;
}

function progressOf(o: RolloutObservation): RolloutProgress {
  const waitingServices = o.services.filter((s) => !serviceRolledOut(s));
  const waitingJobs = o.jobs.filter((j) => j.state !== 'completed');
  return {
    services_ready: o.services.length - waitingServices.length,
    services_desired: o.services.length,
    instances_ready: o.services.reduce((n, s) => n + runningCount(s), 0),
    instances_desired: o.services.reduce((n, s) => n + s.desired, 0),
    jobs_completed: o.jobs.length - waitingJobs.length,
    jobs_desired: o.jobs.length,
    waiting_on: [
      ...waitingServices.map((s) => serviceProblem(s, o.remembered?.[s.path])),
      ...waitingJobs.map(jobProblem),
    ],
  };
}

/**
 * Decides a deploy's wait (issue 19), rules in order:
 *  1. a job that completed failed fails the deploy at once (a job runs once per version);
 *  2. every service rolled out and every job completed: rolled out;
 *  3. past its timeout (from the action's acceptance): failed, naming each service or job not
 *     done and why;
 *  4. otherwise it waits.
 */
export function planRollout(o: RolloutObservation): RolloutVerdict {
  const progress = progressOf(o);
  const failedJob = o.jobs.find((j) => j.state === 'failed');
  if (failedJob) return { kind: 'failed', reason: jobProblem(failedJob), progress };
  if (progress.waiting_on.length === 0) return { kind: 'rolled-out', progress };
  if (o.now_ms - o.started_ms >= o.timeout_ms)
    return {
      kind: 'failed',
      reason: `not rolled out within ${formatDuration(o.timeout_ms)}: ${progress.waiting_on.join('; ')}`,
      progress,
    };
  return { kind: 'waiting', progress };
}

/** What of a system is left while its teardown waits. */
export interface TeardownObservation {
  readonly services: number;
  readonly desired_lrps: number;
  readonly instances: number;
  readonly tasks: number;
  readonly started_ms: number;
  readonly timeout_ms: number;
  readonly now_ms: number;
}

export type TeardownVerdict =
  | { readonly kind: 'gone' }
  | { readonly kind: 'waiting'; readonly left: string }
  | { readonly kind: 'failed'; readonly reason: string };

/** A teardown is done when nothing of the system is left: model services, DesiredLRPs, instances, tasks. */
export function planTeardown(o: TeardownObservation): TeardownVerdict {
  const parts: [number, string][] = [
    [o.services, 'service(s)'],
    [o.desired_lrps, 'DesiredLRP(s)'],
    [o.instances, 'instance(s)'],
    [o.tasks, 'task(s)'],
  ];
  const left = parts
    .filter(([n]) => n > 0)
    .map(([n, what]) => `${n} ${what}`)
    .join(', ');
  if (left === '') return { kind: 'gone' };
  if (o.now_ms - o.started_ms >= o.timeout_ms)
    return { kind: 'failed', reason: `not torn down within ${formatDuration(o.timeout_ms)}: ${left} left` };
  return { kind: 'waiting', left };
}
