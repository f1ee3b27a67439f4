import { InvalidArgumentError } from '../../core/index.js';
import type { BbsEvent, PruneEventsRequest, ReadEventsRequest } from '../bbs-store-log.js';
import type { StoreContext } from './store-context.js';

const maxEventsPerRead = 10_000;

/** The event log's read side (the write side is db's EventLog, shared with history) and its pruning. */
export class EventStore {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async readEvents(req: ReadEventsRequest): Promise<BbsEvent[]> {
    const [afterTxid, afterId] = parseEventCursor(req.after);
    const limit = Math.min(Math.max(1, req.limit ?? 1000), maxEventsPerRead);
    const rows = await this.#ctx.backend.read((db) =>
      this.#ctx.backend.readEvents(db, afterTxid, afterId, limit),
    );
    return rows.map((row) => {
      const data = JSON.parse(row.data) as Record<string, unknown>;
      return { ...data, id: `${row.txid}-${row.id}`, type: row.type, created_at: row.created_at } as BbsEvent;
    });
  }

  /** The id of the newest readable event ('' when none is kept): `after` it means "from now on". */
  async headEventId(): Promise<string> {
    const head = await this.#ctx.backend.read((db) => this.#ctx.backend.headEvent(db));
    return head ? `${head.txid}-${head.id}` : '';
  }

  async pruneEvents(req: PruneEventsRequest): Promise<number> {
    return this.#ctx.mutate('pruneEvents', async (tx) => {
      // Ids grow with time, so the first event young enough to keep bounds what goes; no index on
      // created_at is needed (one fewer index to update on every write).
      const firstKept = await tx.db
        .selectFrom('events')
        .select('id')
        .where('created_at', '>=', req.before)
        .orderBy('id')
        .limit(1)
        .executeTakeFirst();
      let query = tx.db.deleteFrom('events');
      if (firstKept) query = query.where('id', '<', firstKept.id);
      const result = await query.executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}

function parseEventCursor(after: string | undefined): [number, number] {
  if (after === undefined || after === '') return [-1, 0];
  // Ids are safe integers (and PostgreSQL BIGINTs): a longer run of digits is no event's id.
  const match = /^(\d{1,15})-(\d{1,15})$/.exec(after);
  if (!match) {
    throw new InvalidArgumentError(`Invalid after "${after}": expected the id of an event`, {
      field: 'after',
    });
  }
  return [Number(match[1]), Number(match[2])];
}
