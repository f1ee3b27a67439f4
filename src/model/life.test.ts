import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import { assertLifeMove, canMoveLife, type EntityKind, entityKinds, lifeRank, lifeSteps } from './life.js';

// Written out from seed 003 by hand, so the table is checked against the seed, not against itself.
const allowedBySeed: Readonly<Record<EntityKind, ReadonlySet<string>>> = {
  // Machines: Alive, destroy-machine sets Dying, the MA sets Dead, the PA removes it.
  cell: new Set(['alive -> dying', 'dying -> dead', 'dead -> removed']),
  // Units: Dying any time, the UA sets Dead, the principal's UA or the MA removes it.
  unit: new Set(['alive -> dying', 'dying -> dead', 'dead -> removed']),
  // Services: never Dead; removed at once when nothing references them.
  service: new Set(['alive -> dying', 'alive -> removed', 'dying -> removed']),
  // Relations: cannot be Dead; removed at once with no units in scope.
  relation: new Set(['alive -> dying', 'alive -> removed', 'dying -> removed']),
};

describe('life table (seed 003 "no such thing can ever change to an earlier state")', () => {
  for (const kind of entityKinds) {
    for (const from of lifeSteps) {
      for (const to of lifeSteps) {
        const row = `${from} -> ${to}`;
        const allowed = allowedBySeed[kind].has(row);
        it(`${kind}: ${row}: ${allowed ? 'allowed' : 'forbidden'}`, () => {
          assert.equal(canMoveLife(kind, from, to), allowed);
          if (allowed) {
            assertLifeMove(kind, from, to);
            assert.ok(lifeRank(to) > lifeRank(from), 'every allowed move goes forward');
          } else {
            assert.throws(
              () => assertLifeMove(kind, from, to, 'x1'),
              (err: unknown) =>
                err instanceof BerthError &&
                err.code === 'illegal_transition' &&
                err.details.from === from &&
                err.details.to === to &&
                err.message.includes('x1') &&
                err.message.includes(kind),
            );
          }
        });
      }
    }
  }
});
