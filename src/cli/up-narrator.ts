import type { BbsEvent, BbsStore } from '../bbs/index.js';
import { runLoop, type ServiceLogger } from '../core/index.js';

/**
 * The one line `berth up` prints for a BBS event a user watching the terminal cares about: an
 * instance running, crashing or failing to be placed, an LRP desired or removed, a task ending.
 * Everything else (claims, heartbeats, every request) stays in the log file.
 */
export function narrateEvent(event: BbsEvent): string | undefined {
  switch (event.type) {
    case 'desired_lrp_created':
      return `desired ${event.desired_lrp.process_guid} (${event.desired_lrp.instances} instances)`;
    case 'desired_lrp_removed':
      return `removed ${event.desired_lrp.process_guid}`;
    case 'desired_lrp_changed':
      return event.before.instances === event.after.instances
        ? undefined
        : `scaled ${event.after.process_guid}: ${event.before.instances} → ${event.after.instances} instances`;
    case 'actual_lrp_changed': {
      const { before, after } = event;
      const instance = `${after.process_guid}#${after.index}`;
      if (after.evacuating || before.state === after.state) {
        return after.placement_error && after.placement_error !== before.placement_error
          ? `instance ${instance} not placed: ${after.placement_error}`
          : undefined;
      }
      if (after.state === 'RUNNING') return `instance ${instance} running on cell ${after.cell_id}`;
      if (after.state === 'CRASHED')
        return `instance ${instance} crashed (${after.crash_count} so far): ${after.crash_reason || 'no reason'}`;
      return undefined;
    }
    case 'task_changed': {
      const { before, after } = event;
      if (after.state !== 'COMPLETED' || before.state === 'COMPLETED') return undefined;
      return after.failed
        ? `task ${after.task_guid} failed: ${after.failure_reason}`
        : `task ${after.task_guid} succeeded`;
    }
    default:
      return undefined;
  }
}

/**
 * Follows the store's events from now on and writes each narrated one, until `signal` aborts.
 * Events already in the store (an earlier run's) are skipped, not replayed.
 */
export async function narrateEvents(
  store: Pick<BbsStore, 'readEvents' | 'headEventId'>,
  write: (line: string) => void,
  options: { readonly signal: AbortSignal; readonly intervalMs?: number; readonly logger?: ServiceLogger },
): Promise<void> {
  // From the head: an earlier run's events are skipped without being read.
  let after: string | undefined = (await store.headEventId()) || undefined;
  const page = 1000;
  await runLoop({
    name: 'berth up narrator',
    signal: options.signal,
    intervalMs: options.intervalMs ?? 500,
    ...(options.logger ? { logger: options.logger } : {}),
    round: async () => {
      for (;;) {
        const events = await store.readEvents({ ...(after !== undefined ? { after } : {}), limit: page });
        for (const event of events) {
          after = event.id;
          const line = narrateEvent(event);
          if (line !== undefined) write(line);
        }
        if (events.length < page) return;
      }
    },
  });
}
