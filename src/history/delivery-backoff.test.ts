import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffMs } from './delivery-backoff.js';

describe('delivery back-off', () => {
  const policy = { baseMs: 100, maxMs: 1000 };
  const rows: ReadonlyArray<[number, number, number]> = [
    [1, 0, 50],
    [1, 0.999, 100],
    [2, 0, 100],
    [3, 0.5, 300],
    [4, 0, 400],
    [5, 0, 500],
    [5, 1, 1000],
    [50, 0, 500],
  ];
  for (const [attempt, random, ms] of rows) {
    it(`attempt ${attempt}, random ${random} → ${ms} ms`, () =>
      assert.equal(backoffMs(attempt, random, policy), ms));
  }
});
