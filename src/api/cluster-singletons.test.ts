import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type BbsStore, openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { ConvergerService, defaultConvergenceConfig } from '../converger/index.js';
import { SingletonLease } from './singleton-lease.js';

/**
 * The cluster services run as Singletons under SingletonLease (what `berth server` does): two
 * servers on one SQLite file, each with its own view of the store and its own converger. Only the
 * lease holder's converger passes; when the holder can no longer renew (its store is unreachable,
 * as after a partition), the other takes over once the lease's TTL has run out.
 */
describe('converger as a singleton of two servers on one SQLite file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-singletons-'));
  const db = join(dir, 'bbs.sqlite3');
  const stores: SqlBbsStore[] = [];
  after(async () => {
    await Promise.all(stores.map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('exactly one converges; the other takes over after the TTL when the holder stops renewing', async () => {
    const ttlMs = 600;
    const passes = { a: [] as number[], b: [] as number[] };
    const reachable = { a: true, b: true };
    const changes = { a: [] as string[], b: [] as string[] };
    const servers: { name: 'a' | 'b'; lease: SingletonLease }[] = [];
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    try {
      // One store handle for both: better-sqlite3 is synchronous, so two handles in one process
      // would block each other's transactions (separate processes are bbs-server.process.test.ts).
      const store = await openBbsStore(db);
      stores.push(store);
      for (const name of ['a', 'b'] as const) {
        // The server's view of the store: counts its converger's passes, and can be cut off.
        const view = new Proxy(store, {
          get(target, prop) {
            const value: unknown = Reflect.get(target, prop, target);
            if (typeof value !== 'function') return value;
            return (...args: unknown[]) => {
              if (!reachable[name]) return Promise.reject(new Error(`server ${name} is partitioned`));
              if (prop === 'readConvergenceSnapshot') passes[name].push(Date.now());
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          },
        }) as BbsStore;
        const converger = new ConvergerService({
          bbs: view,
          config: { ...defaultConvergenceConfig, intervalMs: 20 },
        });
        const lease = new SingletonLease({
          store: view,
          singleton: converger,
          holder: `server-${name}`,
          ttlMs,
          onChange: (event) => changes[name].push(event),
        });
        servers.push({ name, lease });
        lease.start();
      }
      for (let i = 0; i < 100 && !servers.some((s) => s.lease.held); i++) await sleep(10);
      await sleep(300);
      const holders = servers.filter((s) => s.lease.held);
      assert.equal(holders.length, 1, 'one lease holder');
      const holder = holders[0]!;
      const other = servers.find((s) => s !== holder)!;
      assert.ok(passes[holder.name].length > 3, 'the holder converges');
      assert.equal(passes[other.name].length, 0, 'the other does not');

      // The holder is cut off from the store: it can neither renew nor act.
      const cutAt = Date.now();
      reachable[holder.name] = false;
      for (let i = 0; i < 300 && !other.lease.held; i++) await sleep(10);
      const tookOverAt = Date.now();
      assert.ok(other.lease.held, 'the other server took over');
      assert.ok(holder.lease.held === undefined, 'the cut-off holder gave up');
      // Not before the lease the holder last renewed could have run out (renewals every ttl/3).
      assert.ok(tookOverAt - cutAt >= ttlMs - ttlMs / 3 - 50, `took over after ${tookOverAt - cutAt} ms`);
      const before = passes[other.name].length;
      await sleep(200);
      assert.ok(passes[other.name].length > before, 'the new holder converges');
      // The log tells a lease lost from one let go at stop (berth-server logs these events).
      await other.lease.stop();
      assert.deepEqual(changes[holder.name], ['acquired', 'lost']);
      assert.deepEqual(changes[other.name], ['acquired', 'released']);
    } finally {
      reachable.a = true;
      reachable.b = true;
      await Promise.all(servers.map((s) => s.lease.stop()));
    }
  });
});
