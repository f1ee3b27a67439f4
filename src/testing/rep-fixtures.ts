import type { ActualLRP, BbsStore } from '../bbs/index.js';
import type { CellExecutor } from '../executor/index.js';
import { Rep, type RepLRPWork, type RepOptions } from '../rep/index.js';
import { SimulatedExecutor } from './simulated-executor.js';

/**
 * A rep for the rep's own tests: cell `cell-1` in zone `z1`, a rep URL nothing listens on (the
 * tests call `perform` and `poll` themselves), and an evacuation that never times out unless a
 * test says otherwise.
 */
export function testRep(bbs: BbsStore, executor: CellExecutor, options: Partial<RepOptions> = {}): Rep {
  return new Rep({
    bbs,
    executor,
    cellId: 'cell-1',
    zone: 'z1',
    repUrl: 'http://127.0.0.1:1',
    evacuationTimeoutMs: 60 * 60_000,
    ...options,
  });
}

/**
 * `store` with one method replaced: every other method is the store's own, bound to it (so its
 * private fields work through the proxy).
 */
export function withMethod<T extends object>(
  store: T,
  name: keyof T,
  method: (...args: never[]) => unknown,
): T {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === name) return method;
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The work an auction hands a rep for index `index` of LRP `p1` (64 MB, domain `d`). */
export function p1Work(index: number): RepLRPWork {
  return { process_guid: 'p1', index, domain: 'd', memory_mb: 64, disk_mb: 0, placement_tags: [] };
}

/**
 * A started rep over `bbs` with a simulated executor of 20 containers that start in 1 ms (its
 * data in `dir`); its passes run only when the test calls them (and one at start).
 */
export async function startedSimulatedRep(
  bbs: BbsStore,
  dir: string,
): Promise<{ readonly rep: Rep; readonly executor: SimulatedExecutor }> {
  const executor = new SimulatedExecutor({
    capacity: { memory_mb: 4096, disk_mb: 4096, containers: 20 },
    hostAddress: '127.0.0.1',
    dataDir: dir,
    behaviour: { startDelayMs: 1 },
  });
  const rep = testRep(bbs, executor, { pollIntervalMs: 60 * 60_000 });
  await rep.start();
  return { rep, executor };
}

/**
 * Moves `actual` (RUNNING on this test's cell) to RUNNING on cell-2 behind its rep's back, as the
 * converger and another rep would: unclaimed, claimed there, started there.
 */
export async function moveToAnotherCell(store: BbsStore, actual: ActualLRP): Promise<void> {
  const ref = { process_guid: actual.process_guid, index: actual.index };
  const unclaimed = await store.unclaimActualLRP({ ...ref, expected: actual.modification_tag });
  const elsewhere = { instance_guid: 'elsewhere', cell_id: 'cell-2' };
  const claimed = await store.claimActualLRP({
    ...ref,
    expected: unclaimed.modification_tag,
    instance_key: elsewhere,
  });
  await store.startActualLRP({
    ...ref,
    expected: claimed.modification_tag,
    instance_key: elsewhere,
    net_info: { address: '10.0.0.2', ports: [] },
  });
}
