import { InvalidArgumentError } from '../core/index.js';
import type { MonitorTiming } from './bbs-types.js';

/**
 * The defaults of a monitor's timing, chosen to ride out a loaded machine (docs/bbs.md, "Monitor
 * timing"). Kubernetes' probes default to a 1 s timeout, a 10 s period and 3 failures; berth used
 * 1 s, 0.5 s and 3, so 1.5 s of a starved machine killed every healthy instance at once. A check
 * now gets 5 s to answer and must fail 3 times over at least 10 s (period 5 s) before an instance
 * is killed: a dead app is still replaced within about 15–20 s.
 */
export const monitorTimingDefaults: Required<MonitorTiming> = {
  timeout_ms: 5_000,
  period_ms: 5_000,
  failure_threshold: 3,
  startup_grace_ms: 0,
};

/** Bounds of each field: a zero period would spin, a huge one would never notice a dead app. */
export const monitorTimingBounds: { readonly [K in keyof MonitorTiming]-?: readonly [number, number] } = {
  timeout_ms: [1, 300_000],
  period_ms: [100, 3_600_000],
  failure_threshold: [1, 100],
  startup_grace_ms: [0, 3_600_000],
};

/** A monitor timing field out of its bounds: the field (`monitor.period_ms`) and why. */
export interface MonitorTimingProblem {
  readonly field: string;
  readonly message: string;
}

/**
 * What is wrong with a monitor's timing fields, each named. The HTTP schemas accept any integer
 * there (their union of check kinds would only say "monitor is invalid"); the bounds are checked
 * here, by the store for DesiredLRPs and by the system definition's checks for services.
 */
export function monitorTimingProblems(monitor: MonitorTiming, prefix = 'monitor'): MonitorTimingProblem[] {
  const problems: MonitorTimingProblem[] = [];
  for (const [key, [min, max]] of Object.entries(monitorTimingBounds) as [
    keyof MonitorTiming,
    [number, number],
  ][]) {
    const value: unknown = monitor[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
      problems.push({
        field: `${prefix}.${key}`,
        message: `must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`,
      });
  }
  return problems;
}

/** Throws the first problem as a 400 naming its field. */
export function validateMonitorTiming(monitor: MonitorTiming): void {
  const [problem] = monitorTimingProblems(monitor);
  if (problem)
    throw new InvalidArgumentError(`${problem.field} ${problem.message}`, {
      field: problem.field,
      limit: monitorTimingBounds[problem.field.split('.').pop() as keyof MonitorTiming][1],
    });
}

/** Only the timing fields of a monitor (for copying them onto a rebuilt check). */
export function monitorTimingOf(monitor: MonitorTiming): MonitorTiming {
  const timing: { -readonly [K in keyof MonitorTiming]: MonitorTiming[K] } = {};
  for (const key of Object.keys(monitorTimingBounds) as (keyof MonitorTiming)[])
    if (monitor[key] !== undefined) timing[key] = monitor[key];
  return timing;
}
