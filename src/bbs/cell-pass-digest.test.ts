import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { actualDigestLine, cellPassDigest, digestOfLines, taskDigestLine } from './cell-pass-digest.js';

const actuals = [
  { process_guid: 'web', index: 1, evacuating: false, modification_tag: { epoch: 'e1', index: 4 } },
  { process_guid: 'web', index: 0, evacuating: true, modification_tag: { epoch: 'e0', index: 2 } },
];
const tasks = [{ task_guid: 't-1', modification_tag: { epoch: 'e9', index: 0 } }];

describe('cellPassDigest', () => {
  it('is the value reps already hold for the same records (unchanged across servers of this round and the last)', () => {
    // Computed by the digest as it was before the idle pass read rows as arrays (one hash update per line).
    assert.equal(cellPassDigest(actuals, tasks), 'iOpNSlEXtYAn9h0eQrv_Nh4o1Bu70Iq-B1WSprUJSOM');
    assert.equal(cellPassDigest([], []), '47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU');
  });

  it('is the digest of the same lines built from columns (the idle pass), in any order', () => {
    const lines = [
      taskDigestLine('t-1', 'e9', 0),
      actualDigestLine('web', 0, true, 'e0', 2),
      actualDigestLine('web', 1, false, 'e1', 4),
    ];
    assert.equal(digestOfLines(lines), cellPassDigest([...actuals].reverse(), tasks));
  });

  it('changes when a tag moves, a record comes or goes, or an instance starts evacuating', () => {
    const base = cellPassDigest(actuals, tasks);
    const moved = actuals.map((a, i) =>
      i === 0 ? { ...a, modification_tag: { epoch: 'e1', index: 5 } } : a,
    );
    assert.notEqual(cellPassDigest(moved, tasks), base);
    assert.notEqual(cellPassDigest(actuals.slice(1), tasks), base);
    assert.notEqual(cellPassDigest(actuals, []), base);
    const evacuating = actuals.map((a, i) => (i === 0 ? { ...a, evacuating: true } : a));
    assert.notEqual(cellPassDigest(evacuating, tasks), base);
  });
});
