import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { type ActionControl, ActionRunner, type ActionRunnerOptions } from './action-runner.js';
import { SqlModelTxnRunner } from './sql-model-txn-runner.js';
import { type ActionRecord, type ActionWork, SqlSystemStore } from './sql-system-store.js';

// Ownership against the real action rows (SQLite): what the runner records, what a stop leaves,
// what a takeover claims. What an action does is the executor's, stubbed here.
describe('action runner (SQLite)', () => {
  let dir: string;
  let store: SqlBbsStore;
  let systems: SqlSystemStore;
  let n = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-action-runner-'));
    store = await openBbsStore(join(dir, 'bbs.sqlite3'));
    await SqlModelTxnRunner.open(store.backend);
    systems = new SqlSystemStore(store.backend);
  });

  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function runner(execute: ActionRunnerOptions['execute'], over: Partial<ActionRunnerOptions> = {}) {
    return new ActionRunner({
      systems,
      execute,
      owner: 'me',
      pollMs: 5,
      heartbeatMs: 60_000,
      ownerTtlMs: 60_000,
      log: () => {},
      ...over,
    });
  }

  /** A deploy of a fresh system, accepted for `owner` (the runner does not look at its kind). */
  async function accept(owner: string): Promise<ActionWork> {
    n += 1;
    const action = { kind: 'deploy', path: '/' } as const;
    const accepted = await systems.acceptAction({ id: `d-${n}`, system: `s${n}`, action, owner });
    return { ...accepted, definition: null };
  }

  it('an action that ends is recorded succeeded, with the lines it noted', async () => {
    const r = runner(async (_work, control) => control.note('did it'));
    const work = await accept('me');
    r.run(work);
    await r.idle();
    const done = await systems.getAction(work.id);
    assert.equal(done.state, 'succeeded');
    assert.match(done.log.join('\n'), /did it/);
  });

  it('an action that throws is recorded failed with the error as its reason', async () => {
    const r = runner(async () => {
      throw new Error('no such image');
    });
    const work = await accept('me');
    r.run(work);
    await r.idle();
    const done = await systems.getAction(work.id);
    assert.deepEqual([done.state, done.reason], ['failed', 'no such image']);
  });

  it('a stop ends a polling action at its next checkpoint and leaves it in progress and ours', async () => {
    let polling!: () => void;
    const started = new Promise<void>((resolve) => {
      polling = resolve;
    });
    const r = runner(async (_work: ActionWork, control: ActionControl) => {
      polling();
      for (;;) await control.poll();
    });
    const work = await accept('me');
    r.run(work);
    await started;
    await r.stop();
    const left: ActionRecord = await systems.getAction(work.id);
    assert.deepEqual([left.state, left.owner], ['in_progress', 'me']);
  });

  it('an action whose owner is dead is taken over and run by the next runner', async () => {
    const work = await accept('gone-server');
    const ran: string[] = [];
    const r = runner(
      async (w) => {
        ran.push(w.id);
      },
      { ownerDead: (owner) => owner === 'gone-server' },
    );
    const claimed = await r.recover();
    assert.ok(claimed.some((c) => c.id === work.id));
    await r.idle();
    assert.ok(ran.includes(work.id));
    assert.deepEqual(
      [(await systems.getAction(work.id)).state, (await systems.getAction(work.id)).owner],
      ['succeeded', 'me'],
    );
  });

  it('a BBS event wakes a polling action at once instead of at its next interval', {
    timeout: 30_000,
  }, async () => {
    let ring: () => void = () => {};
    let polling!: () => void;
    const waiting = new Promise<void>((resolve) => {
      polling = resolve;
    });
    const r = runner(
      async (_work, control) => {
        polling();
        // An hour's interval: only the event ends this wait within the test's timeout.
        await control.poll();
      },
      {
        pollMs: 3_600_000,
        onEvents: (listener) => {
          ring = listener;
          return () => {};
        },
      },
    );
    const work = await accept('me');
    assert.equal(work.state, 'accepted');
    r.run(work);
    await waiting;
    // Rung until the wait has begun (the first ring may come before the action reaches its poll).
    const bell = setInterval(() => ring(), 20);
    await r.idle();
    clearInterval(bell);
    assert.equal((await systems.getAction(work.id)).state, 'succeeded');
  });
});
