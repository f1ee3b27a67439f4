import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff, backoffDelayMs, runLoop, type ServiceLogger, Wakeup } from './service-loop.js';

describe('backoffDelayMs', () => {
  const policy = { initialMs: 250, capMs: 2_000 };
  const table: ReadonlyArray<[number, number]> = [
    [1, 250],
    [2, 500],
    [3, 1_000],
    [4, 2_000],
    [5, 2_000],
    [1_000, 2_000],
  ];
  for (const [failures, ms] of table) {
    it(`after ${failures} failure(s) waits ${ms} ms`, () =>
      assert.equal(backoffDelayMs(failures, policy), ms));
  }

  it('with jitter, spreads over the upper half of the ceiling and never reaches zero', () => {
    const jittered = { ...policy, jitter: true };
    assert.equal(backoffDelayMs(3, jittered, 0), 500);
    assert.equal(backoffDelayMs(3, jittered, 0.5), 750);
    assert.equal(backoffDelayMs(3, jittered, 0.999_999), 1_000);
    assert.equal(backoffDelayMs(1, { initialMs: 1, capMs: 1, jitter: true }, 0), 1);
  });
});

describe('Backoff', () => {
  it('counts failures until a success resets them', () => {
    const backoff = new Backoff({ initialMs: 100, capMs: 10_000 }, () => 0);
    assert.deepEqual([backoff.failed(), backoff.failed(), backoff.failed()], [100, 200, 400]);
    assert.equal(backoff.failures, 3);
    backoff.succeeded();
    assert.equal(backoff.failures, 0);
    assert.equal(backoff.failed(), 100);
  });
});

describe('Wakeup', () => {
  it('a wake during a wait ends it as woken', async () => {
    const wakeup = new Wakeup();
    const waiting = wakeup.wait(60_000, new AbortController().signal);
    wakeup.wake();
    assert.equal(await waiting, 'woken');
  });

  it('remembers one wake that came while nobody waited', async () => {
    const wakeup = new Wakeup();
    wakeup.wake();
    wakeup.wake();
    const signal = new AbortController().signal;
    assert.equal(await wakeup.wait(60_000, signal), 'woken');
    assert.equal(await wakeup.wait(1, signal), 'timeout');
  });

  it('an abort ends the wait as aborted', async () => {
    const wakeup = new Wakeup();
    const controller = new AbortController();
    const waiting = wakeup.wait(60_000, controller.signal);
    controller.abort();
    assert.equal(await waiting, 'aborted');
  });
});

describe('runLoop', () => {
  it('runs a round per wake-up and stops when aborted, after the round in progress', async () => {
    const controller = new AbortController();
    const wakeup = new Wakeup();
    let rounds = 0;
    const loop = runLoop({
      name: 'test',
      signal: controller.signal,
      intervalMs: 60_000,
      wakeup,
      round: async () => {
        rounds += 1;
        if (rounds < 3) setImmediate(() => wakeup.wake());
        else controller.abort();
      },
    });
    await loop;
    assert.equal(rounds, 3);
  });

  it('logs a failed round with its error and failure count, then recovers', async () => {
    const controller = new AbortController();
    const warnings: Array<Readonly<Record<string, unknown>>> = [];
    const logger: ServiceLogger = { info: () => {}, warn: (fields) => warnings.push(fields) };
    let rounds = 0;
    await runLoop({
      name: 'flaky',
      signal: controller.signal,
      intervalMs: 1,
      backoff: { initialMs: 1, capMs: 1 },
      logger,
      round: async () => {
        rounds += 1;
        if (rounds <= 2) throw new Error(`store unreachable ${rounds}`);
        controller.abort();
      },
    });
    assert.equal(rounds, 3);
    assert.deepEqual(
      warnings.map((w) => [w.loop, w.error, w.failures]),
      [
        ['flaky', 'store unreachable 1', 1],
        ['flaky', 'store unreachable 2', 2],
      ],
    );
  });
});
