import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  checkLocks,
  type LifecycleAction,
  type LockMode,
  lockCompatibility,
  lockModes,
  lockRowsFor,
  planLocks,
  releaseLocks,
} from './lock-table.js';
import { LockHeldError } from './model-errors.js';
import { ancestors, containsPath } from './tree-path.js';

const compatibleBySeed = new Set(['IX+IX']);

describe('intention lock compatibility (seed 004 "IntentionLock")', () => {
  for (const held of lockModes) {
    for (const wanted of lockModes satisfies readonly LockMode[]) {
      const ok = compatibleBySeed.has(`${held}+${wanted}`);
      it(`held ${held}, wanted ${wanted}: ${ok ? 'granted' : 'refused'}`, () => {
        assert.equal(lockCompatibility[held][wanted], ok);
      });
    }
  }
});

describe('planLocks (seed 004 "LifecycleActionManager")', () => {
  it('"if the deploy\'s path was /a/b/c/d ... lock /, /a, /a/b, and /a/b/c at intention-exclusive, and /a/b/c/d at exclusive"', () => {
    assert.deepEqual(planLocks({ kind: 'deploy', path: '/a/b/c/d' }), [
      { path: '/', mode: 'IX' },
      { path: '/a', mode: 'IX' },
      { path: '/a/b', mode: 'IX' },
      { path: '/a/b/c', mode: 'IX' },
      { path: '/a/b/c/d', mode: 'X' },
    ]);
  });
  it('"A teardown effects the whole system, so ... an exclusive lock at /"', () => {
    assert.deepEqual(planLocks({ kind: 'teardown' }), [{ path: '/', mode: 'X' }]);
  });
  it('a deploy of the whole system (/) is exclusive on / alone', () => {
    assert.deepEqual(planLocks({ kind: 'deploy', path: '/' }), [{ path: '/', mode: 'X' }]);
  });
  it('refuses a path that is not a tree path', () => {
    assert.throws(() => planLocks({ kind: 'deploy', path: 'a/b' }), /not a path/);
    assert.throws(() => planLocks({ kind: 'deploy', path: '/a/' }), /not a path/);
  });
});

function conflict(held: readonly [string, LifecycleAction], wanted: readonly [string, LifecycleAction]) {
  return checkLocks(lockRowsFor('shop', held[0], held[1]), lockRowsFor('shop', wanted[0], wanted[1]));
}

describe("checkLocks: the seed's semantics", () => {
  it('"if a single teardown is running, all attempts to deploy or teardown will fail"', () => {
    const t: [string, LifecycleAction] = ['t1', { kind: 'teardown' }];
    assert.equal(conflict(t, ['d1', { kind: 'deploy', path: '/a' }]).ok, false);
    assert.equal(conflict(t, ['t2', { kind: 'teardown' }]).ok, false);
  });
  it('a teardown fails while any deploy runs, naming the deploy', () => {
    const r = conflict(['d-17', { kind: 'deploy', path: '/a/b' }], ['t1', { kind: 'teardown' }]);
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.ok(r.error instanceof LockHeldError);
      assert.equal(r.error.code, 'lock_held');
      assert.equal(r.error.holder.action_id, 'd-17');
      assert.match(r.error.message, /deploy d-17 of \/a\/b holds IX on \//);
    }
  });
  it('sibling deploys /a/b and /a/c run together', () => {
    assert.equal(
      conflict(['d1', { kind: 'deploy', path: '/a/b' }], ['d2', { kind: 'deploy', path: '/a/c' }]).ok,
      true,
    );
  });
  it('"there is no deploy running whose path is an ancestor": /a/b is refused while /a deploys, and /a while /a/b does', () => {
    assert.equal(
      conflict(['d1', { kind: 'deploy', path: '/a' }], ['d2', { kind: 'deploy', path: '/a/b' }]).ok,
      false,
    );
    const r = conflict(['d1', { kind: 'deploy', path: '/a/b' }], ['d2', { kind: 'deploy', path: '/a' }]);
    assert.equal(r.ok, false);
    if (!r.ok)
      assert.match(
        r.error.message,
        /Cannot deploy \/a in system "shop": deploy d1 of \/a\/b holds IX on \/a/,
      );
  });
  it('locks of another system never conflict, and a released action frees its rows', () => {
    const held = lockRowsFor('other', 'd1', { kind: 'teardown' });
    assert.equal(checkLocks(held, lockRowsFor('shop', 'd2', { kind: 'teardown' })).ok, true);
    const mine = lockRowsFor('shop', 'd1', { kind: 'teardown' });
    assert.deepEqual(releaseLocks([...held, ...mine], 'd1'), []);
  });

  it('property: two deploys conflict exactly when one path contains the other (or they are equal)', () => {
    const seg = fc.constantFrom('a', 'b', 'c');
    const path = fc
      .array(seg, { minLength: 0, maxLength: 4 })
      .map((s) => (s.length === 0 ? '/' : `/${s.join('/')}`));
    fc.assert(
      fc.property(path, path, (p, q) => {
        const r = conflict(['d1', { kind: 'deploy', path: p }], ['d2', { kind: 'deploy', path: q }]);
        assert.equal(!r.ok, containsPath(p, q) || containsPath(q, p), `${p} vs ${q}`);
        assert.equal(ancestors(p).length, p === '/' ? 0 : p.split('/').length - 1);
      }),
      { numRuns: 500 },
    );
  });
  it('property: a teardown conflicts with every deploy, both ways', () => {
    const seg = fc.constantFrom('a', 'b');
    const path = fc.array(seg, { minLength: 1, maxLength: 3 }).map((s) => `/${s.join('/')}`);
    fc.assert(
      fc.property(path, (p) => {
        assert.equal(conflict(['t', { kind: 'teardown' }], ['d', { kind: 'deploy', path: p }]).ok, false);
        assert.equal(conflict(['d', { kind: 'deploy', path: p }], ['t', { kind: 'teardown' }]).ok, false);
      }),
    );
  });
});
