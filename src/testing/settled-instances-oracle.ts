import type { CellPresence, ConvergenceActualLRP, DesiredLRP, SettledInstances } from '../bbs/index.js';

/**
 * What the converger's read leaves out (`ConvergenceSnapshot.settled_instances`), written from its
 * definition over the whole set of records: the oracle the stores' read is checked against, and
 * the split the planner's property test plans on. The store does it in SQL.
 */
export function splitSettled(input: {
  readonly desired: readonly DesiredLRP[];
  readonly actuals: readonly ConvergenceActualLRP[];
  readonly cells: readonly CellPresence[];
  readonly now: Date;
}): { actuals: ConvergenceActualLRP[]; settled: SettledInstances[] } {
  const live = new Set(
    input.cells.filter((c) => Date.parse(c.expires_at) > input.now.getTime()).map((c) => c.cell_id),
  );
  const wanted = new Map(input.desired.map((d) => [d.process_guid, d.instances]));
  const isSettled = (a: ConvergenceActualLRP): boolean => {
    const instances = wanted.get(a.process_guid);
    return (
      instances !== undefined &&
      !a.evacuating &&
      (a.state === 'CLAIMED' || a.state === 'RUNNING') &&
      live.has(a.cell_id) &&
      a.index >= 0 &&
      a.index < instances
    );
  };
  const settledCount = new Map<string, number>();
  const indices = new Map<string, Set<number>>();
  for (const a of input.actuals) {
    const instances = wanted.get(a.process_guid);
    if (instances === undefined || a.evacuating || a.index < 0 || a.index >= instances) continue;
    const held = indices.get(a.process_guid) ?? new Set<number>();
    indices.set(a.process_guid, held.add(a.index));
    if (isSettled(a)) settledCount.set(a.process_guid, (settledCount.get(a.process_guid) ?? 0) + 1);
  }
  const settled: SettledInstances[] = [];
  for (const [process_guid, count] of settledCount)
    if (indices.get(process_guid)?.size === wanted.get(process_guid)) settled.push({ process_guid, count });
  const leftOut = new Set(settled.map((x) => x.process_guid));
  return {
    actuals: input.actuals.filter((a) => !(leftOut.has(a.process_guid) && isSettled(a))),
    settled: settled.sort((x, y) => (x.process_guid < y.process_guid ? -1 : 1)),
  };
}
