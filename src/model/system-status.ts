import type { ActualLRPState } from '../bbs/index.js';
import { IllegalTransitionError } from '../core/index.js';
import type { Life } from './life.js';

/** Seed 004's service states, as berth computes them from a service's instances. */
export type ServiceState = 'stable' | 'scaling' | 'updating' | 'degraded' | 'deleting';

/**
 * Where a system is in its own lifecycle (seed 004 "State Diagram"). `active` is the box the seed
 * draws with dashes: inside it the state is computed from the services.
 */
export type SystemPhase = 'pending' | 'failed' | 'active' | 'deleting' | 'gone';

export type SystemState =
  | 'pending'
  | 'failed'
  | 'stable'
  | 'updating'
  | 'scaling'
  | 'degraded'
  | 'deleting'
  | 'gone';

/**
 * The diagram's arrows. "does not exist" → pending on create; pending → failed or into the box;
 * "At any point, a system may be deleted": every phase → deleting; deleting → gone. One arrow is
 * berth's reading of the seed, which draws none out of `failed` but deleting: failed → pending,
 * redeploying a failed system (it starts over as a new one would, without a teardown first).
 * `deleting` has no way back: a system whose teardown failed is torn down again, not redeployed.
 */
export const systemPhaseTransitions: Readonly<Record<SystemPhase, readonly SystemPhase[]>> = {
  gone: ['pending'],
  pending: ['failed', 'active', 'deleting'],
  failed: ['pending', 'deleting'],
  active: ['deleting'],
  deleting: ['gone'],
};

export function assertSystemPhaseMove(from: SystemPhase, to: SystemPhase, system?: string): void {
  if (!systemPhaseTransitions[from].includes(to))
    throw new IllegalTransitionError('system', from, to, system);
}

/** Where a system goes, and with what reason, when an action is accepted or ends. */
export interface PhaseStep {
  readonly to: SystemPhase;
  readonly reason: string;
}

/**
 * The phase an accepted action puts its system in (from `gone` when it has no row): a teardown
 * moves it to deleting; a deploy creates it pending, starts a failed one over (pending), and leaves
 * an active one in the box (its state shows `updating` while services roll). A deploy of a system
 * being deleted is refused by the table (deleting → pending is no arrow).
 */
export function phaseOnAccept(kind: 'deploy' | 'teardown', from: SystemPhase): PhaseStep {
  if (kind === 'teardown') return { to: 'deleting', reason: '' };
  return from === 'active' ? { to: 'active', reason: '' } : { to: 'pending', reason: '' };
}

/**
 * The phase an ended action leaves its system in. A teardown that succeeded: gone; one that
 * failed stays deleting with its reason (torn down again). A deploy that succeeded moves a pending
 * system into the box (and clears an active one's degraded condition); a failed system stays
 * failed until a deploy of it is accepted. A deploy that failed: pending → failed with the reason
 * (seed 004: "unable to … create any necessary resources"); an active system stays in the box
 * with the reason as a `degraded` condition (the box's states move freely, and degraded is the one
 * that says something is wrong).
 */
export function phaseOnFinish(
  kind: 'deploy' | 'teardown',
  outcome: 'succeeded' | 'failed',
  from: SystemPhase,
  reason: string,
  currentReason: string,
): PhaseStep {
  if (kind === 'teardown') return outcome === 'succeeded' ? { to: 'gone', reason: '' } : { to: from, reason };
  if (outcome === 'succeeded')
    return from === 'pending' || from === 'active'
      ? { to: 'active', reason: '' }
      : { to: from, reason: currentReason };
  if (from === 'pending') return { to: 'failed', reason };
  return { to: from, reason: from === 'active' ? `last deploy failed: ${reason}` : reason };
}

export interface InstanceObservation {
  readonly index: number;
  /** The DesiredLRP version the instance runs. */
  readonly version: string;
  readonly state: ActualLRPState;
  readonly crash_count: number;
}

export interface ServiceObservation {
  readonly life: Life;
  readonly desired_instances: number;
  readonly current_version: string;
  readonly instances: readonly InstanceObservation[];
}

/**
 * A service's state from its instances. Precedence, most urgent first (berth's policy; the seed
 * leaves it to the service documentation):
 *  - deleting: the service is Dying;
 *  - degraded: an instance is CRASHED, or is not RUNNING and has crashed before (a crash that is
 *    restarted at once goes straight back to UNCLAIMED);
 *  - updating: instances of an older version exist (a rolling update is under way);
 *  - scaling: the number of instances differs from the desired count, or some never-crashed
 *    instance is still starting (UNCLAIMED or CLAIMED);
 *  - stable: exactly the desired number, all RUNNING the current version.
 */
export function serviceState(o: ServiceObservation): ServiceState {
  if (o.life !== 'alive') return 'deleting';
  if (o.instances.some((i) => i.state === 'CRASHED' || (i.state !== 'RUNNING' && i.crash_count > 0)))
    return 'degraded';
  if (o.instances.some((i) => i.version !== o.current_version)) return 'updating';
  if (o.instances.length !== o.desired_instances) return 'scaling';
  if (o.instances.some((i) => i.state !== 'RUNNING')) return 'scaling';
  return 'stable';
}

export interface SystemObservation {
  readonly phase: SystemPhase;
  /** Why validation or resource creation failed (phase `failed`), or why the last redeploy of an active system failed. */
  readonly failure_reason?: string;
  /** Services only: "currently jobs do not impact the state of a system". */
  readonly services: readonly ServiceState[];
}

export interface SystemStatus {
  readonly state: SystemState;
  readonly reason?: string;
}

/**
 * Seed 004: outside `pending` and `deleting` (and berth's `failed`, `gone`), "if any service is
 * degraded: return degraded; if any service is updating: return updating; if any service is
 * scaling: return scaling; return stable". A service being deleted while the system lives (a deploy
 * dropped it) counts as updating: the system's desired definition is still being applied.
 */
export function systemStatus(o: SystemObservation): SystemStatus {
  switch (o.phase) {
    case 'gone':
    case 'pending':
    case 'deleting':
      return { state: o.phase };
    case 'failed':
      return { state: 'failed', reason: o.failure_reason ?? 'unknown failure' };
    case 'active':
      // A failed redeploy leaves its reason on an active system: degraded until a deploy succeeds.
      if (o.failure_reason) return { state: 'degraded', reason: o.failure_reason };
      if (o.services.includes('degraded')) return { state: 'degraded' };
      if (o.services.includes('updating') || o.services.includes('deleting')) return { state: 'updating' };
      if (o.services.includes('scaling')) return { state: 'scaling' };
      return { state: 'stable' };
  }
}
