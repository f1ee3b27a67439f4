import type { BbsEvent, BbsStore } from '../bbs/index.js';
import { Backoff, describeError, type ServiceLogger, silentLogger, sleep, Wakeup } from '../core/index.js';
import type { RouteTable } from './route-table.js';

/**
 * What the router reads from the BBS: one snapshot, the event log's tail (to start following from),
 * the cells, and the event stream. A BbsClient (`berth router --bbs URL`) is one as it is; a server's
 * own store is one through `storeRouteSource`.
 */
export interface RouteSource extends Pick<BbsStore, 'readSnapshot' | 'readEvents' | 'listCells'> {
  streamEvents(options: { after?: string; signal?: AbortSignal }): AsyncIterable<BbsEvent>;
}

/**
 * A store in this process as a route source: its event log read after the cursor whenever the
 * store says it wrote (`onEvents`), and every `pollMs` for other servers' writes (as the SSE route
 * does for remote readers).
 */
export function storeRouteSource(
  store: Pick<BbsStore, 'readSnapshot' | 'readEvents' | 'listCells'>,
  onEvents: (listener: () => void) => () => void,
  pollMs = 250,
): RouteSource {
  return {
    readSnapshot: () => store.readSnapshot(),
    readEvents: (req) => store.readEvents(req),
    listCells: () => store.listCells(),
    async *streamEvents({ after, signal = new AbortController().signal }) {
      const wakeup = new Wakeup();
      const unsubscribe = onEvents(() => wakeup.wake());
      let cursor = after;
      try {
        while (!signal.aborted) {
          const events = await store.readEvents({
            ...(cursor !== undefined ? { after: cursor } : {}),
            limit: 1000,
          });
          for (const event of events) {
            cursor = event.id;
            yield event;
          }
          if (events.length < 1000) await wakeup.wait(pollMs, signal);
        }
      } finally {
        unsubscribe();
      }
    },
  };
}

export interface RouteFeedOptions {
  readonly signal: AbortSignal;
  /** How often the cells' presences are read (they expire without an event). */
  readonly cellPollMs?: number;
  readonly logger?: ServiceLogger;
  readonly now?: () => number;
  /** Told after each (re)sync, with the number of routes. */
  readonly onSynced?: (routes: number) => void;
}

/**
 * Keeps `table` in step with the BBS until `signal` aborts: the cursor of the log's tail, then one
 * snapshot, then every event after that cursor (events older than the snapshot replay onto it and
 * end in the same state, since each carries whole records). A dropped stream is resumed from its
 * last event by the client; a stream that fails (the cursor was pruned, the BBS refused) is a
 * resync from a fresh snapshot after a back-off. Cells are read every `cellPollMs` because a
 * presence expires without an event.
 */
export async function followRoutes(
  source: RouteSource,
  table: RouteTable,
  options: RouteFeedOptions,
): Promise<void> {
  const { signal } = options;
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? Date.now;
  const backoff = new Backoff({ initialMs: 250, capMs: 10_000 });
  const cells = pollCells(source, table, options, now);
  while (!signal.aborted) {
    try {
      const after = await tailCursor(source);
      table.reset(await source.readSnapshot(), now());
      options.onSynced?.(table.routes().length);
      backoff.succeeded();
      for await (const event of source.streamEvents({ ...(after !== undefined ? { after } : {}), signal })) {
        if (signal.aborted) break;
        table.apply(event);
      }
    } catch (err) {
      if (signal.aborted) break;
      const retryMs = backoff.failed();
      logger.warn({ error: describeError(err), retry_in_ms: retryMs }, 'router: BBS feed failed; resyncing');
      await sleep(retryMs, signal);
    }
  }
  await cells;
}

/** The id of the newest event kept (undefined: none yet), read page by page. */
async function tailCursor(source: Pick<BbsStore, 'readEvents'>): Promise<string | undefined> {
  let after: string | undefined;
  for (;;) {
    const page = await source.readEvents({ ...(after !== undefined ? { after } : {}), limit: 1000 });
    after = page.at(-1)?.id ?? after;
    if (page.length < 1000) return after;
  }
}

/** The longest pause between two reads of the cells, whatever their expiries. */
const maxCellPollMs = 30_000;

async function pollCells(
  source: Pick<BbsStore, 'listCells'>,
  table: RouteTable,
  options: RouteFeedOptions,
  now: () => number,
): Promise<void> {
  const { signal } = options;
  const minMs = options.cellPollMs ?? 500;
  while (!signal.aborted) {
    // Presences that begin, change or end come as events; what only a read finds is an extended
    // expiry. So read just before the first known expiry (a cell that expires then leaves the
    // table one poll late at most), never more often than `cellPollMs`, and at least every 30 s.
    const due = table.nextCellCheckAt();
    const waitMs = due === undefined ? minMs : Math.min(maxCellPollMs, Math.max(minMs, due - now()));
    await sleep(waitMs, signal);
    if (signal.aborted) return;
    try {
      table.setCells(await source.listCells(), now());
    } catch (err) {
      // catch-all: the BBS is away; the cells last seen stay, and the stream's retry logs the outage
      void err;
    }
  }
}
