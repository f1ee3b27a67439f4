import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  type CrashPolicy,
  defaultCrashPolicy,
  nextCrashState,
  restartDelay,
  shouldRestartCrashed,
  validateCrashPolicy,
} from './crash-policy.js';

const s = 1000;
const min = 60 * s;
const t0 = new Date('2024-01-01T00:00:00.000Z');
function at(offsetMs: number): Date {
  return new Date(t0.getTime() + offsetMs);
}

describe('restartDelay: DESIGN.md schedule', () => {
  const schedule: ReadonlyArray<[number, number]> = [
    [0, 0],
    [1, 0],
    [2, 0],
    [3, 30 * s],
    [4, 1 * min],
    [5, 2 * min],
    [6, 4 * min],
    [7, 8 * min],
    [8, 16 * min],
    [9, 16 * min],
    [50, 16 * min],
    [199, 16 * min],
    [5000, 16 * min],
  ];
  for (const [count, wait] of schedule) {
    it(`crash count ${count} waits ${wait / s} s`, () =>
      assert.equal(restartDelay(count, defaultCrashPolicy), wait));
  }
  it('scales with the configured durations (tests run in seconds)', () => {
    const fast: CrashPolicy = { ...defaultCrashPolicy, baseMs: 100, maxMs: 1000 };
    assert.deepEqual(
      [3, 4, 5, 6, 7, 8].map((c) => restartDelay(c, fast)),
      [100, 200, 400, 800, 1000, 1000],
    );
  });
  it('is monotonic and bounded by max', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), (count) => {
        const d = restartDelay(count, defaultCrashPolicy);
        assert.ok(d <= defaultCrashPolicy.maxMs);
        assert.ok(restartDelay(count + 1, defaultCrashPolicy) >= d);
      }),
    );
  });
});

describe('nextCrashState: the RepCrashDance', () => {
  it('first crash of a fresh instance → count 1, UNCLAIMED, start at once', () => {
    assert.deepEqual(nextCrashState({ crash_count: 0, last_crashed_at: null }, t0, defaultCrashPolicy), {
      crash_count: 1,
      last_crashed_at: t0.toISOString(),
      state: 'UNCLAIMED',
      requestStart: true,
    });
  });
  it('no ActualLRP at all (BBS purged) counts as a first crash', () => {
    const out = nextCrashState(null, t0, defaultCrashPolicy);
    assert.equal(out.crash_count, 1);
    assert.equal(out.state, 'UNCLAIMED');
  });
  // Each crash right after the previous one: the instance climbs the whole ladder.
  const ladder: ReadonlyArray<[number, 'UNCLAIMED' | 'CRASHED']> = [
    [1, 'UNCLAIMED'],
    [2, 'UNCLAIMED'],
    [3, 'CRASHED'],
    [4, 'CRASHED'],
    [5, 'CRASHED'],
    [200, 'CRASHED'],
    [201, 'CRASHED'],
  ];
  for (const [count, state] of ladder) {
    it(`crash number ${count} → ${state}${state === 'UNCLAIMED' ? ' + start request' : ''}`, () => {
      const out = nextCrashState(
        { crash_count: count - 1, last_crashed_at: at(-1 * s).toISOString() },
        t0,
        defaultCrashPolicy,
      );
      assert.equal(out.crash_count, count);
      assert.equal(out.state, state);
      assert.equal(out.requestStart, state === 'UNCLAIMED');
      assert.equal(out.last_crashed_at, t0.toISOString());
    });
  }
  it('previous crash exactly 2 × max ago → no reset (must be older)', () => {
    const out = nextCrashState(
      { crash_count: 7, last_crashed_at: at(-32 * min).toISOString() },
      t0,
      defaultCrashPolicy,
    );
    assert.equal(out.crash_count, 8);
    assert.equal(out.state, 'CRASHED');
  });
  it('previous crash older than 2 × max → count restarts from 0, then increments to 1', () => {
    const out = nextCrashState(
      { crash_count: 7, last_crashed_at: at(-32 * min - 1).toISOString() },
      t0,
      defaultCrashPolicy,
    );
    assert.equal(out.crash_count, 1);
    assert.equal(out.state, 'UNCLAIMED');
    assert.equal(out.requestStart, true);
  });
  it('even a count past maxRestarts is reset by a long quiet period', () => {
    const out = nextCrashState(
      { crash_count: 250, last_crashed_at: at(-33 * min).toISOString() },
      t0,
      defaultCrashPolicy,
    );
    assert.equal(out.crash_count, 1);
  });
  it('the reset window follows the configured max', () => {
    const fast: CrashPolicy = { ...defaultCrashPolicy, baseMs: 100, maxMs: 1000 };
    const last = at(-2001).toISOString();
    assert.equal(nextCrashState({ crash_count: 5, last_crashed_at: last }, t0, fast).crash_count, 1);
    const recent = at(-2000).toISOString();
    assert.equal(nextCrashState({ crash_count: 5, last_crashed_at: recent }, t0, fast).crash_count, 6);
  });
});

describe('shouldRestartCrashed: the converger side', () => {
  function crashed(count: number, agoMs: number) {
    return { state: 'CRASHED' as const, crash_count: count, last_crashed_at: at(-agoMs).toISOString() };
  }
  const waits: ReadonlyArray<[number, number]> = [
    [3, 30 * s],
    [4, 1 * min],
    [5, 2 * min],
    [6, 4 * min],
    [7, 8 * min],
    [8, 16 * min],
    [150, 16 * min],
    [199, 16 * min],
  ];
  for (const [count, wait] of waits) {
    it(`count ${count}: not 1 ms before ${wait / s} s, yes at ${wait / s} s`, () => {
      assert.equal(shouldRestartCrashed(crashed(count, wait - 1), t0, defaultCrashPolicy), false);
      assert.equal(shouldRestartCrashed(crashed(count, wait), t0, defaultCrashPolicy), true);
    });
  }
  for (const count of [200, 201, 1000]) {
    it(`count ${count} (≥ maxRestarts) is never restarted`, () => {
      assert.equal(shouldRestartCrashed(crashed(count, 365 * 24 * 60 * min), t0, defaultCrashPolicy), false);
    });
  }
  for (const state of ['UNCLAIMED', 'CLAIMED', 'RUNNING'] as const) {
    it(`${state} is not the converger's to restart`, () => {
      const a = { state, crash_count: 5, last_crashed_at: at(-60 * min).toISOString() };
      assert.equal(shouldRestartCrashed(a, t0, defaultCrashPolicy), false);
    });
  }
  it('CRASHED without last_crashed_at (rewritten BBS) restarts at once', () => {
    const a = { state: 'CRASHED' as const, crash_count: 4, last_crashed_at: null };
    assert.equal(shouldRestartCrashed(a, t0, defaultCrashPolicy), true);
  });
});

describe('validateCrashPolicy', () => {
  it('accepts the defaults and refuses base > max', () => {
    assert.equal(validateCrashPolicy(defaultCrashPolicy), defaultCrashPolicy);
    assert.throws(() => validateCrashPolicy({ ...defaultCrashPolicy, baseMs: 10, maxMs: 5 }));
    assert.throws(() => validateCrashPolicy({ ...defaultCrashPolicy, immediateRestarts: -1 }));
  });
});
