import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { settledWithin } from './bounded-wait.js';

describe('settledWithin', () => {
  it('ends when the promise settles, long before the bound', async () => {
    let settle = () => {};
    const settled = new Promise<void>((resolve) => {
      settle = resolve;
    });
    let over = false;
    const waiting = settledWithin(settled, 3_600_000).then(() => {
      over = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(over, false);
    settle();
    await waiting;
    assert.equal(over, true);
  });

  it('ends at the bound when the promise never settles', async () => {
    await settledWithin(new Promise<void>(() => {}), 10);
  });
});
