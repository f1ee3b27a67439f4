import type { RowQuery } from '../../db/index.js';
import { actualLrpStates } from '../actual-lrp-transitions.js';
import type { BbsSnapshot, ConvergenceSnapshot, RecordCounts } from '../bbs-store-log.js';
import type { ActualLRPState, TaskState } from '../bbs-types.js';
import { taskStates } from '../task-transitions.js';
import type { BbsDatabase } from './bbs-database.js';
import { readUnsettledActuals } from './convergence-read.js';
import { arrayToCell, readAllActual, readAllDesired } from './row-mapping.js';
import type { StoreContext } from './store-context.js';

/** Whole-store reads: the snapshots the converger and auctioneer plan on, and the record counts of `/metrics`. */
export class SnapshotReads {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async readSnapshot(): Promise<BbsSnapshot> {
    const now = this.#ctx.now().toISOString();
    return this.#ctx.backend.readRows(async (query) => ({
      desired_lrps: await readAllDesired(query),
      actual_lrps: await readAllActual(query),
      domains: await readFreshDomains(query, now),
      cells: await readLiveCells(query, now),
      now,
    }));
  }

  async readConvergenceSnapshot(): Promise<ConvergenceSnapshot> {
    // Read before the actuals. A request taken and acked in between was placed, so the next pass
    // sees it gone and re-emits its instance if still UNCLAIMED; a request added in between is a
    // new start or an unclaim, whose instance is not yet past the re-emit timeout.
    const queued_lrp_starts = await this.#ctx.backend.readRows((query) =>
      query("SELECT DISTINCT guid, idx FROM start_requests WHERE kind = 'lrp'", [], (r) => ({
        process_guid: r[0] as string,
        index: Number(r[1]),
      })),
    );
    const now = this.#ctx.now().toISOString();
    return this.#ctx.backend.readRows(async (query) => {
      const desired_lrps = await readAllDesired(query);
      const cells = await readLiveCells(query, now);
      const actuals = await readUnsettledActuals(query, new Set(cells.map((c) => c.cell_id)), desired_lrps);
      return {
        desired_lrps,
        ...actuals,
        domains: await readFreshDomains(query, now),
        cells,
        now,
        queued_lrp_starts,
      };
    });
  }

  async countRecords(): Promise<RecordCounts> {
    return this.#ctx.backend.read(async (tx) => {
      const db = tx.withTables<BbsDatabase>();
      const count = (table: 'desired_lrps' | 'cells' | 'start_requests' | 'stop_requests') =>
        db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number | string>().as('n'))
          .executeTakeFirstOrThrow()
          .then((r) => Number(r.n));
      const actualRows = await db
        .selectFrom('actual_lrps')
        .select(['state', 'evacuating', (eb) => eb.fn.countAll<number | string>().as('n')])
        .groupBy(['state', 'evacuating'])
        .execute();
      const actual = Object.fromEntries(actualLrpStates.map((s) => [s, 0])) as Record<ActualLRPState, number>;
      let evacuating = 0;
      for (const row of actualRows) {
        if (row.evacuating === 1) evacuating += Number(row.n);
        else actual[row.state as ActualLRPState] += Number(row.n);
      }
      const taskRows = await db
        .selectFrom('tasks')
        .select(['state', (eb) => eb.fn.countAll<number | string>().as('n')])
        .groupBy('state')
        .execute();
      const tasks = Object.fromEntries(taskStates.map((s) => [s, 0])) as Record<TaskState, number>;
      for (const row of taskRows) tasks[row.state as TaskState] += Number(row.n);
      return {
        desired_lrps: await count('desired_lrps'),
        actual_lrps: actual,
        evacuating_actual_lrps: evacuating,
        tasks,
        cells: await count('cells'),
        start_requests: await count('start_requests'),
        stop_requests: await count('stop_requests'),
      };
    });
  }
}

function readFreshDomains(query: RowQuery, now: string) {
  return query(
    'SELECT domain, fresh_until FROM domains WHERE fresh_until > ? ORDER BY domain',
    [now],
    (r) => ({
      domain: r[0] as string,
      fresh_until: r[1] as string,
    }),
  );
}

function readLiveCells(query: RowQuery, now: string) {
  return query(
    'SELECT cell_id, zone, capacity, rep_url, placement_tags, expires_at, rep_token FROM cells WHERE expires_at > ? ORDER BY cell_id',
    [now],
    arrayToCell,
  );
}
