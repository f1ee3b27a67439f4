import type { ContainerStatus, HistoryItem } from './history-types.js';
import { isTerminalStatus } from './status-mapping.js';

/** What decides the top-level status: a history item's status, times and id. */
export type StatusItem = Pick<HistoryItem, 'id' | 'status' | 'time_recorded' | 'external_timestamp'>;

export interface TopLevelStatus {
  readonly status: ContainerStatus;
  readonly status_time: string;
}

/**
 * When a change happened: the runtime's own timestamp if it reported one, else when berth recorded
 * it. Journaled events arrive late; ordering them by arrival would let a stale `start` delivered
 * after a crash look newer than the crash.
 */
export function effectiveTime(item: Pick<HistoryItem, 'time_recorded' | 'external_timestamp'>): string {
  return item.external_timestamp ?? item.time_recorded;
}

/** Orders items by when they happened, then by arrival (ids are numeric, arrival-ordered). */
export function compareItems(a: StatusItem, b: StatusItem): number {
  const ta = effectiveTime(a);
  const tb = effectiveTime(b);
  if (ta !== tb) return ta < tb ? -1 : 1;
  return compareIds(a.id, b.id);
}

export function compareIds(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * One step of the rule: a newer item sets the status, except that a terminal status is only ever
 * replaced by a newer terminal one. `item` must be newer than every item folded into `current`.
 */
export function stepStatus(current: TopLevelStatus | undefined, item: StatusItem): TopLevelStatus {
  if (current && isTerminalStatus(current.status) && !isTerminalStatus(item.status)) return current;
  // Seed: status-time is the time-recorded of the item that set the status.
  return { status: item.status, status_time: item.time_recorded };
}

/** The top-level status of a whole history, in any order of arrival. */
export function foldStatus(items: readonly StatusItem[]): TopLevelStatus | undefined {
  let current: TopLevelStatus | undefined;
  for (const item of [...items].sort(compareItems)) current = stepStatus(current, item);
  return current;
}

/**
 * The key under which a repeated event is recorded once: same status, message and
 * external_timestamp (seed 001 via DESIGN.md). A journal delivering a batch twice lands here.
 */
export function dedupeKey(item: {
  readonly status: ContainerStatus;
  readonly message: string | null;
  readonly external_timestamp: string | null;
}): string {
  return JSON.stringify([item.status, item.message, item.external_timestamp]);
}

/**
 * External timestamps come from other clocks and other formatters; stored in one canonical
 * ISO-8601 form they compare (and dedupe) as the instants they name.
 */
export function canonicalTimestamp(text: string): string | undefined {
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}
