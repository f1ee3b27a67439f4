import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isNotFound, isSuperseded, orAbsent } from './absence.js';
import { BerthError, type ErrorCode } from './berth-error.js';

const fail = (code: ErrorCode): BerthError => new BerthError(code, `failed with ${code}`);

describe('orAbsent', () => {
  it('passes a value through', async () => {
    assert.equal(await orAbsent(Promise.resolve(7)), 7);
  });

  it('turns not_found into undefined', async () => {
    assert.equal(await orAbsent(Promise.reject(fail('not_found'))), undefined);
  });

  for (const code of ['unavailable', 'internal', 'cas_conflict'] as const) {
    it(`rethrows ${code}: an outage is not an absence`, async () => {
      await assert.rejects(
        orAbsent(Promise.reject(fail(code))),
        (err: unknown) => err instanceof BerthError && err.code === code,
      );
    });
  }

  it('rethrows errors that are not BerthErrors', async () => {
    await assert.rejects(orAbsent(Promise.reject(new TypeError('fetch failed'))), TypeError);
  });
});

describe('isNotFound and isSuperseded', () => {
  const table: ReadonlyArray<[ErrorCode, boolean, boolean]> = [
    ['not_found', true, true],
    ['cas_conflict', false, true],
    ['already_exists', false, true],
    ['conflict', false, true],
    ['illegal_transition', false, true],
    ['unavailable', false, false],
    ['invalid_argument', false, false],
    ['internal', false, false],
  ];
  for (const [code, notFound, superseded] of table) {
    it(`${code}: not found ${notFound}, superseded ${superseded}`, () => {
      assert.equal(isNotFound(fail(code)), notFound);
      assert.equal(isSuperseded(fail(code)), superseded);
    });
  }

  it('a plain Error is neither', () => {
    assert.equal(isNotFound(new Error('not_found')), false);
    assert.equal(isSuperseded(new Error('cas_conflict')), false);
  });
});
