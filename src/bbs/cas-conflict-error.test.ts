import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CasConflictError, formatTag, parseTag } from './cas-conflict-error.js';

describe('modification tags as ETags', () => {
  const tag = { epoch: '3f0c-uuid', index: 7 };
  for (const text of ['3f0c-uuid:7', '"3f0c-uuid:7"', 'W/"3f0c-uuid:7"', ' "3f0c-uuid:7" ']) {
    it(`reads ${JSON.stringify(text)}`, () => assert.deepEqual(parseTag(text), tag));
  }
  for (const bad of ['', 'nocolon', ':5', 'e:-1', 'e:1.5', 'e:x']) {
    it(`refuses ${JSON.stringify(bad)}`, () => assert.equal(parseTag(bad), undefined));
  }
  it('formats back', () => assert.equal(formatTag(tag), '3f0c-uuid:7'));
});

describe('CasConflictError', () => {
  it('carries the current record and is retryable', () => {
    const current = { modification_tag: { epoch: 'e', index: 2 } };
    const err = new CasConflictError('ActualLRP', 'web/0', { epoch: 'e', index: 1 }, current);
    assert.equal(err.code, 'cas_conflict');
    assert.equal(err.retryable, true);
    assert.equal(err.current, current);
    assert.deepEqual(err.details.current, current);
    assert.match(err.message, /expected tag e:1, current e:2/);
  });
});
