import type { BbsStore } from '../bbs/index.js';
import type { CellExecutor } from '../executor/index.js';
import { Rep, type RepLRPWork, type RepOptions } from '../rep/index.js';

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
