import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import { assertContainerTransition, canTransitionContainer, containerStates } from './container-state.js';

// The seed's "Allowed transitions" written out by hand, so the table is checked against the seed
// rather than against itself.
const allowedBySeed: ReadonlySet<string> = new Set([
  'RESERVED -> INITIALIZING',
  'INITIALIZING -> CREATED',
  'INITIALIZING -> COMPLETED',
  'CREATED -> COMPLETED',
  'CREATED -> RUNNING',
  'RUNNING -> COMPLETED',
]);

describe('container state transitions (seed 002 "Allowed transitions")', () => {
  for (const from of containerStates) {
    for (const to of containerStates) {
      const row = `${from} -> ${to}`;
      const allowed = allowedBySeed.has(row);
      it(`${row}: ${allowed ? 'allowed' : 'forbidden'}`, () => {
        assert.equal(canTransitionContainer(from, to), allowed);
        if (allowed) {
          assertContainerTransition(from, to);
        } else {
          assert.throws(
            () => assertContainerTransition(from, to, 'c1'),
            (err: unknown) =>
              err instanceof BerthError &&
              err.code === 'illegal_transition' &&
              err.details.from === from &&
              err.details.to === to &&
              err.message.includes('c1'),
          );
        }
      });
    }
  }
});
