import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from './berth-error.js';
import { formatDuration, parseDuration } from './duration.js';

describe('parseDuration', () => {
  const cases: ReadonlyArray<[string, number]> = [
    ['30m', 1_800_000],
    ['24h', 86_400_000],
    ['1h30m', 5_400_000],
    ['250ms', 250],
    ['1.5s', 1500],
    ['10', 10_000],
    ['0', 0],
    ['2d', 172_800_000],
  ];
  for (const [text, ms] of cases) {
    it(`reads "${text}" as ${ms} ms`, () => assert.equal(parseDuration(text), ms));
  }
  for (const bad of ['', 'abc', '5x', '10m junk', '-5s', 'm']) {
    it(`refuses "${bad}" naming the flag`, () => {
      assert.throws(
        () => parseDuration(bad, '--grace-period'),
        (err: unknown) =>
          err instanceof BerthError &&
          err.code === 'invalid_argument' &&
          err.message.includes('--grace-period'),
      );
    });
  }
  it('formats back to a short human form', () => {
    assert.equal(formatDuration(500), '500ms');
    assert.equal(formatDuration(90_000), '90s');
    assert.equal(formatDuration(1_800_000), '30m');
    assert.equal(formatDuration(86_400_000), '24h');
  });
});
