import fc from 'fast-check';
import type {
  ActualLRP,
  ActualLRPState,
  CellPresence,
  DesiredLRP,
  Domain,
  Task,
  TaskState,
} from '../bbs/index.js';
import {
  type ConvergenceConfig,
  type ConvergenceInput,
  defaultConvergenceConfig,
  type LRPConvergenceItem,
} from '../converger/index.js';

/**
 * The converger's planner tests' world: a fixed clock, records made in one line, and random
 * clusters (fast-check) for the properties every plan must have.
 */
export const now = new Date('2024-06-01T12:00:00.000Z');
export const ago = (ms: number): string => new Date(now.getTime() - ms).toISOString();
export const later = (ms: number): string => new Date(now.getTime() + ms).toISOString();
export const s = 1000;
export const min = 60 * s;
export const tag = { epoch: 'e', index: 1 };
export const config: ConvergenceConfig = defaultConvergenceConfig;

export function desired(process_guid: string, instances: number, domain = 'apps'): DesiredLRP {
  return {
    process_guid,
    domain,
    instances,
    image: 'img',
    env: {},
    memory_mb: 128,
    disk_mb: 256,
    ports: [8080],
    routes: {},
    annotation: '',
    start_timeout_s: 60,
    placement_tags: [],
    created_at: ago(60 * min),
    modification_tag: tag,
  };
}

export function actual(
  process_guid: string,
  index: number,
  state: ActualLRPState,
  over: Partial<ActualLRP> = {},
): ActualLRP {
  const placed = state === 'CLAIMED' || state === 'RUNNING';
  return {
    process_guid,
    index,
    domain: 'apps',
    instance_guid: `${process_guid}-${index}`,
    cell_id: placed ? 'cell-1' : '',
    state,
    crash_count: 0,
    last_crashed_at: null,
    crash_reason: '',
    since: ago(1 * s),
    placement_error: '',
    address: '',
    ports: [],
    evacuating: false,
    modification_tag: tag,
    ...over,
  };
}

export const liveCell: CellPresence = {
  cell_id: 'cell-1',
  zone: 'z1',
  capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
  rep_url: 'http://cell-1',
  placement_tags: [],
  expires_at: later(30 * s),
};
export const expiredCell: CellPresence = { ...liveCell, cell_id: 'cell-2', expires_at: ago(1) };
export const fresh: Domain = { domain: 'apps', fresh_until: later(2 * min) };
export const stale: Domain = { domain: 'apps', fresh_until: ago(1) };

/** The plan in a compact, readable form: "kind process_guid/index". */
export function lrpSummary(items: readonly LRPConvergenceItem[]): string[] {
  return items.map((i) => `${i.kind} ${i.key.process_guid}/${i.key.index}`).sort();
}

export function task(task_guid: string, state: TaskState, over: Partial<Task> = {}): Task {
  return {
    task_guid,
    domain: 'jobs',
    image: 'img',
    env: {},
    memory_mb: 64,
    disk_mb: 64,
    result_file: '',
    completion_callback_url: '',
    placement_tags: [],
    state,
    cell_id: state === 'RUNNING' ? 'cell-1' : '',
    result: '',
    failed: false,
    failure_reason: '',
    created_at: ago(1 * s),
    updated_at: ago(1 * s),
    first_completed_at: state === 'COMPLETED' || state === 'RESOLVING' ? ago(1 * s) : null,
    modification_tag: tag,
    ...over,
  };
}
// ---------------------------------------------------------------------------------------------
// Properties

export const stateArb = fc.constantFrom<ActualLRPState>('UNCLAIMED', 'CLAIMED', 'RUNNING', 'CRASHED');
export const worldArb = fc.record({
  desired: fc.array(
    fc.record({
      guid: fc.constantFrom('a', 'b', 'c', 'd'),
      instances: fc.integer({ min: 0, max: 6 }),
      domain: fc.constantFrom('apps', 'other'),
    }),
    { maxLength: 4 },
  ),
  actuals: fc.array(
    fc.record({
      guid: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
      index: fc.integer({ min: 0, max: 8 }),
      state: stateArb,
      cell: fc.constantFrom('cell-1', 'cell-2', 'ghost'),
      evacuating: fc.boolean(),
      crashCount: fc.integer({ min: 0, max: 210 }),
      agoMs: fc.integer({ min: 0, max: 40 * min }),
      domain: fc.constantFrom('apps', 'other'),
    }),
    { maxLength: 30 },
  ),
  appsFresh: fc.boolean(),
  otherFresh: fc.boolean(),
});

export type World = typeof worldArb extends fc.Arbitrary<infer W> ? W : never;

export function buildWorld(w: World): ConvergenceInput {
  const seenDesired = new Set<string>();
  const ds: DesiredLRP[] = [];
  for (const d of w.desired) {
    if (seenDesired.has(d.guid)) continue;
    seenDesired.add(d.guid);
    ds.push(desired(d.guid, d.instances, d.domain));
  }
  const seen = new Set<string>();
  const as: ActualLRP[] = [];
  for (const a of w.actuals) {
    const k = `${a.guid}/${a.index}/${a.evacuating}`;
    if (seen.has(k)) continue; // the BBS holds one record per key
    seen.add(k);
    const placed = a.state === 'CLAIMED' || a.state === 'RUNNING' || a.evacuating;
    as.push(
      actual(a.guid, a.index, a.evacuating ? 'RUNNING' : a.state, {
        domain: ds.find((d) => d.process_guid === a.guid)?.domain ?? a.domain,
        cell_id: placed ? a.cell : '',
        evacuating: a.evacuating,
        crash_count: a.crashCount,
        last_crashed_at: a.state === 'CRASHED' ? ago(a.agoMs) : null,
        since: ago(a.agoMs),
      }),
    );
  }
  const domains: Domain[] = [
    w.appsFresh ? fresh : stale,
    { domain: 'other', fresh_until: w.otherFresh ? later(1 * min) : ago(1 * min) },
  ];
  return { desired: ds, actuals: as, cells: [liveCell, expiredCell], domains, tasks: [], now, config };
}
