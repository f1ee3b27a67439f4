import { type Monitor, monitorTimingDefaults } from '../bbs/index.js';

/**
 * The rules of a container's monitor, apart from the timers and sockets that run it (executor.ts)
 * so they are tested with an injected clock. Issue 20: on a starved machine (load 60 on 2 cores)
 * every timer and every check of the cell runs late at once; counting those misses killed every
 * healthy instance together. A round that ran late is therefore not evidence against the app.
 */
export interface MonitorSettings {
  readonly timeoutMs: number;
  /** Between checks once RUNNING. */
  readonly periodMs: number;
  /** Between checks before the first pass (start-up): short, so RUNNING is reported soon. */
  readonly startupIntervalMs: number;
  readonly failureThreshold: number;
  readonly startupGraceMs: number;
  /** The first pass must come within this of the container's creation (start_timeout_s)… */
  readonly startTimeoutMs: number;
  /**
   * How late a round may start (timer drift), or how far past its timeout a check may come back,
   * before the round counts as the cell's own starvation rather than the app's failure.
   */
  readonly lateToleranceMs: number;
}

export function monitorSettings(
  monitor: Monitor,
  startTimeoutS: number,
  startupIntervalMs: number,
): MonitorSettings {
  const timeoutMs = monitor.timeout_ms ?? monitorTimingDefaults.timeout_ms;
  const periodMs = monitor.period_ms ?? monitorTimingDefaults.period_ms;
  return {
    timeoutMs,
    periodMs,
    startupIntervalMs,
    failureThreshold: monitor.failure_threshold ?? monitorTimingDefaults.failure_threshold,
    startupGraceMs: monitor.startup_grace_ms ?? monitorTimingDefaults.startup_grace_ms,
    startTimeoutMs: startTimeoutS * 1000,
    // "Well beyond the period": a timer a whole period late (at least a second) means the cell's
    // event loop, not the app, was stuck.
    lateToleranceMs: Math.max(1_000, periodMs),
  };
}

/** What the monitor knows of one container between rounds. */
export interface MonitorState {
  /** The monitor passed once: the container is RUNNING. */
  readonly running: boolean;
  /** Counted failures in a row since the last pass. */
  readonly failures: number;
  /** When the container was created (start_timeout_s counts from here). */
  readonly createdAt: number;
  /** When its pod started (the start-up grace counts from here). */
  readonly startedAt: number;
}

/** One check: when it was due (its timer's target), when it ran, when it answered, and how. */
export interface MonitorRound {
  readonly dueAt: number;
  readonly ranAt: number;
  readonly answeredAt: number;
  readonly healthy: boolean;
}

export type MonitorVerdict =
  | { readonly kind: 'became-running' }
  | { readonly kind: 'healthy' }
  /** A failure that counts (`failures` in a row now). */
  | { readonly kind: 'miss'; readonly failures: number }
  /**
   * A failure that does not count: the round ran late (a starved cell), within the start-up
   * grace, or before the first pass while the start deadline has not passed.
   */
  | { readonly kind: 'ignored'; readonly why: 'late' | 'grace' | 'starting' }
  | { readonly kind: 'kill'; readonly reason: string };

/** The verdict on one round, the state after it, and when the next round is due (unless killed). */
export function judgeMonitorRound(
  settings: MonitorSettings,
  state: MonitorState,
  round: MonitorRound,
): { verdict: MonitorVerdict; state: MonitorState; nextInMs: number } {
  const next = (verdict: MonitorVerdict, after: MonitorState) => ({
    verdict,
    state: after,
    nextInMs: after.running ? settings.periodMs : settings.startupIntervalMs,
  });
  if (round.healthy)
    return next(state.running ? { kind: 'healthy' } : { kind: 'became-running' }, {
      ...state,
      running: true,
      failures: 0,
    });
  if (roundRanLate(settings, round)) return next({ kind: 'ignored', why: 'late' }, state);
  if (round.answeredAt - state.startedAt < settings.startupGraceMs)
    return next({ kind: 'ignored', why: 'grace' }, state);
  if (!state.running) {
    // Before the first pass a failure is expected (the app is starting): only the deadline counts.
    // start_timeout_s counts from the creation (as in Diego); a grace can only lengthen it.
    const grace = settings.startupGraceMs > 0 ? state.startedAt + settings.startupGraceMs : 0;
    const deadline = Math.max(state.createdAt + settings.startTimeoutMs, grace);
    if (round.answeredAt > deadline)
      return next(
        {
          kind: 'kill',
          reason: `the monitor did not pass within ${Math.round((deadline - state.createdAt) / 1000)}s`,
        },
        state,
      );
    return next({ kind: 'ignored', why: 'starting' }, state);
  }
  const failures = state.failures + 1;
  if (failures >= settings.failureThreshold)
    return next(
      {
        kind: 'kill',
        reason:
          settings.failureThreshold === 1
            ? 'the monitor failed'
            : `the monitor failed ${settings.failureThreshold} times in a row`,
      },
      { ...state, failures },
    );
  return next({ kind: 'miss', failures }, { ...state, failures });
}

/**
 * The round's timer fired well after it was due, or its check came back well after its own
 * timeout could have ended it: the process running the monitor was starved, and a failed check
 * then says nothing about the app. (A check that merely timed out on time does count.)
 */
export function roundRanLate(settings: MonitorSettings, round: MonitorRound): boolean {
  return (
    round.ranAt - round.dueAt > settings.lateToleranceMs ||
    round.answeredAt - round.ranAt > settings.timeoutMs + settings.lateToleranceMs
  );
}
