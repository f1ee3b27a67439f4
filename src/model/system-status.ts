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
 * "At any point, a system may be deleted": every phase → deleting; deleting → gone.
 */
export const systemPhaseTransitions: Readonly<Record<SystemPhase, readonly SystemPhase[]>> = {
  gone: ['pending'],
  pending: ['failed', 'active', 'deleting'],
  failed: ['deleting'],
  active: ['deleting'],
  deleting: ['gone'],
};

export function assertSystemPhaseMove(from: SystemPhase, to: SystemPhase, system?: string): void {
  if (!systemPhaseTransitions[from].includes(to))
    throw new IllegalTransitionError('system', from, to, system);
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
  /** Why validation or resource creation failed; required in phase `failed`. */
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
      if (o.services.includes('degraded')) return { state: 'degraded' };
      if (o.services.includes('updating') || o.services.includes('deleting')) return { state: 'updating' };
      if (o.services.includes('scaling')) return { state: 'scaling' };
      return { state: 'stable' };
  }
}
