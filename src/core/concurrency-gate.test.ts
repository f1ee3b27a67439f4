import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConcurrencyGate } from './concurrency-gate.js';

describe('ConcurrencyGate', () => {
  it('keeps at most its width in flight and starts the rest in arrival order', async () => {
    const gate = new ConcurrencyGate(2);
    const started: number[] = [];
    const release: (() => void)[] = [];
    let peak = 0;
    const calls = [0, 1, 2, 3, 4].map((i) =>
      gate.run(async () => {
        started.push(i);
        peak = Math.max(peak, gate.running);
        await new Promise<void>((resolve) => release.push(resolve));
        return i;
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, [0, 1]);
    while (started.length < 5 || release.length > 0) {
      release.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.deepEqual(await Promise.all(calls), [0, 1, 2, 3, 4]);
    assert.deepEqual(started, [0, 1, 2, 3, 4]);
    assert.equal(peak, 2);
    assert.equal(gate.running, 0);
  });

  it('frees the slot of a call that fails', async () => {
    const gate = new ConcurrencyGate(1);
    await assert.rejects(
      gate.run(async () => Promise.reject(new Error('boom'))),
      /boom/,
    );
    assert.equal(await gate.run(async () => 'next'), 'next');
    assert.equal(gate.running, 0);
  });
});
