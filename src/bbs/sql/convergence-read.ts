import type { RowQuery } from '../../db/index.js';
import type { ConvergenceActualLRP, SettledInstances } from '../bbs-store-log.js';
import type { DesiredLRP } from '../bbs-types.js';
import { arrayToConvergenceActual, convergenceActualColumns } from './row-mapping.js';

/**
 * Past this many gone cells and incomplete LRPs together, the read lists every record instead of
 * naming them in its statements (a parameter each, well below SQLite's and PostgreSQL's limits):
 * a cluster in that state has more to converge than the read costs.
 */
const maxNamed = 5_000;

/** A settled instance (`SettledInstances`), as SQL over `actual_lrps a` joined to `desired_lrps d`. */
const settledCondition =
  "a.evacuating = 0 AND a.state IN ('CLAIMED', 'RUNNING') AND a.idx >= 0 AND a.idx < d.instances";

/**
 * The converger's read of the ActualLRPs, inside the snapshot's transaction: every record except
 * the settled instances, which come back as a count per LRP. In a healthy cluster nearly every
 * record is settled, and a pass makes no item for one, so at 100,000 instances this reads two
 * aggregates and a handful of rows where it read, decoded and then dropped 100,000 (docs/bbs.md).
 *
 * `liveCellIds` are the cells present in the same snapshot. Three statements:
 * 1. the cells records name (an index-only scan): those not live are gone, and their records
 *    are listed, whatever their state, so the pass can reap them;
 * 2. per LRP, its instances at an index it wants, and how many of them are settled: an LRP
 *    whose every index has a record is complete;
 * 3. the records to list: those not settled, those on gone cells, and every record of an LRP
 *    that is not complete but has settled instances (so a missing index shows as one).
 */
export async function readUnsettledActuals(
  query: RowQuery,
  liveCellIds: ReadonlySet<string>,
  desired: readonly DesiredLRP[],
): Promise<{ actual_lrps: ConvergenceActualLRP[]; settled_instances: SettledInstances[] }> {
  const list = (where: readonly string[], params: readonly string[]) =>
    query(
      `SELECT ${convergenceActualColumns}
       FROM actual_lrps a LEFT JOIN desired_lrps d ON d.process_guid = a.process_guid
       ${where.length > 0 ? `WHERE ${where.join(' OR ')}` : ''}
       ORDER BY a.process_guid, a.idx, a.evacuating`,
      params,
      arrayToConvergenceActual,
    );
  const listAll = async () => ({ actual_lrps: await list([], []), settled_instances: [] });
  const named = await query('SELECT cell_id FROM actual_lrps GROUP BY cell_id', [], (r) => r[0] as string);
  // An UNCLAIMED instance names no cell ('').
  const goneCells = named.filter((id) => id !== '' && !liveCellIds.has(id));
  if (goneCells.length > maxNamed) return listAll();
  const onGoneCell = goneCells.length > 0 ? `(a.cell_id IN (${placeholders(goneCells.length)}))` : undefined;

  const perLrp = await query(
    `SELECT a.process_guid, COUNT(*),
       SUM(CASE WHEN a.state IN ('CLAIMED', 'RUNNING')${onGoneCell ? ` AND NOT ${onGoneCell}` : ''} THEN 1 ELSE 0 END)
     FROM actual_lrps a JOIN desired_lrps d ON d.process_guid = a.process_guid
     WHERE a.evacuating = 0 AND a.idx >= 0 AND a.idx < d.instances
     GROUP BY a.process_guid`,
    goneCells,
    (r) => ({ process_guid: r[0] as string, inRange: Number(r[1]), settled: Number(r[2]) }),
  );
  const wanted = new Map(desired.map((d) => [d.process_guid, d.instances]));
  const settled_instances: SettledInstances[] = [];
  const incomplete: string[] = [];
  for (const lrp of perLrp) {
    if (lrp.settled === 0) continue;
    // One instance record per index: as many in range as the LRP wants means none is missing.
    if (lrp.inRange === wanted.get(lrp.process_guid))
      settled_instances.push({ process_guid: lrp.process_guid, count: lrp.settled });
    else incomplete.push(lrp.process_guid);
  }
  if (goneCells.length + incomplete.length > maxNamed) return listAll();

  const listed = [`NOT (d.process_guid IS NOT NULL AND ${settledCondition})`];
  if (onGoneCell) listed.push(onGoneCell);
  if (incomplete.length > 0) listed.push(`a.process_guid IN (${placeholders(incomplete.length)})`);
  return { actual_lrps: await list(listed, [...goneCells, ...incomplete]), settled_instances };
}

function placeholders(n: number): string {
  return Array.from({ length: n }, () => '?').join(', ');
}
