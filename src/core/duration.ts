import { InvalidArgumentError } from './berth-error.js';

const unitMs: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * Parses Go-style durations ("30m", "1h30m", "250ms", "0") into milliseconds, the form every
 * interval flag of berth takes. A bare number is seconds, as `--timeout 10` reads to an operator.
 */
export function parseDuration(text: string, flag = 'duration'): number {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let consumed = 0;
  for (let match = part.exec(trimmed); match !== null; match = part.exec(trimmed)) {
    total += Number(match[1]) * (unitMs[match[2] ?? ''] ?? 0);
    consumed = part.lastIndex;
  }
  if (trimmed === '' || consumed !== trimmed.length) {
    throw new InvalidArgumentError(
      `Invalid ${flag} "${text}": expected a duration such as 30s, 5m, 1h30m or 250ms`,
      { flag, value: text },
    );
  }
  return Math.round(total);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${m}m`;
  return `${Math.round(m / 60)}h`;
}
