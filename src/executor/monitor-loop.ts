import type { Monitor } from '../bbs/index.js';
import { checkMonitor, type MonitoredPod } from './monitor-check.js';
import { judgeMonitorRound, type MonitorState, monitorSettings } from './monitor-policy.js';

/** What the monitor loop of one container needs from the executor. */
export interface MonitorLoopOptions {
  readonly monitor: Monitor;
  /** Where network checks connect (the pod's address). */
  readonly address: string;
  readonly startTimeoutS: number;
  /** Between checks before the first pass. */
  readonly startupIntervalMs: number;
  readonly createdAt: number;
  /** The pod a command check runs in, looked up at each round. */
  pod(): MonitoredPod | undefined;
  /** Whether the container is still CREATED or RUNNING: the loop ends when it is not. */
  live(): boolean;
  /** Keeps the pending timer, so the executor can cancel it when the container ends. */
  setTimer(timer: NodeJS.Timeout | undefined): void;
  onRunning(): void;
  onKill(reason: string): Promise<void>;
  /** The wall clock (tests of the loop may inject one; the rules are monitor-policy.ts's). */
  readonly now?: () => number;
}

/**
 * Runs a container's monitor until the container ends or the monitor gives up: one check at a
 * time, each judged by monitor-policy.ts (the first pass → RUNNING; failures count only when the
 * round did not run late and is past the start-up grace, up to the failure threshold).
 */
export function runMonitorLoop(options: MonitorLoopOptions): void {
  const now = options.now ?? Date.now;
  const settings = monitorSettings(options.monitor, options.startTimeoutS, options.startupIntervalMs);
  let state: MonitorState = { running: false, failures: 0, createdAt: options.createdAt, startedAt: now() };
  const schedule = (delayMs: number) => {
    const dueAt = now() + delayMs;
    options.setTimer(setTimeout(() => void tick(dueAt), delayMs));
  };
  const tick = async (dueAt: number) => {
    options.setTimer(undefined);
    if (!options.live()) return;
    const ranAt = now();
    const healthy = await checkMonitor(options.monitor, options.address, options.pod(), settings.timeoutMs);
    if (!options.live()) return;
    const judged = judgeMonitorRound(settings, state, { dueAt, ranAt, answeredAt: now(), healthy });
    state = judged.state;
    if (judged.verdict.kind === 'kill') return options.onKill(judged.verdict.reason);
    if (judged.verdict.kind === 'became-running') options.onRunning();
    schedule(judged.nextInMs);
  };
  schedule(0);
}
