import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { BerthError } from '../core/index.js';
import {
  addCell,
  addRelation,
  addService,
  addSidecarUnit,
  addUnit,
  assignUnitToCell,
  cellAgentStep,
  cleanupStep,
  destroyCell,
  destroyRelation,
  destroyService,
  destroyUnit,
  dueCleanups,
  enterScope,
  forceDestroyUnit,
  leaveScope,
  MemoryModelTxnRunner,
  type ModelData,
  type ModelTxn,
  type ModelTxnRunner,
  type ModelView,
  provisionerStep,
  relationId,
  runTxn,
  settleModel,
  TxnAbortedError,
  unitAgentStep,
  unitName,
} from '../model/index.js';

/** A runner under test plus a way to read its tables directly and to empty them between cases. */
export interface ModelRunnerTarget {
  readonly runner: ModelTxnRunner;
  /** Every record as stored (for the SQL runner: straight from the tables, not its cache). */
  dump(): Promise<ModelData>;
  /** Empties the model (a fresh case starts from nothing). */
  reset(): Promise<void>;
  /** A second runner on the same storage (another connection, as another server would have). */
  second?(): Promise<ModelTxnRunner>;
  close(): Promise<void>;
}

const now = new Date('2024-05-01T12:00:00.000Z');
const later = new Date('2024-05-01T13:00:00.000Z');
const cells = ['c0', 'c1'];
const services = ['s0', 's1', 's2', 's3'];

type Cmd = readonly [number, number, number, number];

/** The same command alphabet as life-property.test.ts: every rule, agent step and cleanup step. */
function build(v: ModelView, [kind, a, b, c]: Cmd): ModelTxn | null {
  const cell = cells[a % cells.length]!;
  const svc = services[a % services.length]!;
  const other = services[b % services.length]!;
  const unit = unitName(services[a % 2]!, b % 3);
  const at = c % 2 === 0 ? now : later;
  switch (kind) {
    case 0:
      return addCell(v, cell);
    case 1:
      return destroyCell(v, cell);
    case 2:
      return addService(v, svc, { subordinate: svc === 's2' });
    case 3:
      return destroyService(v, svc, at);
    case 4:
      return addUnit(v, svc, b % 3);
    case 5:
      return assignUnitToCell(v, unit, cells[c % cells.length]!);
    case 6:
      return destroyUnit(v, unit, at);
    case 7:
      return forceDestroyUnit(v, unit, at, 60_000);
    case 8:
      return addRelation(v, svc, other, other === 's2' ? 'container' : 'global');
    case 9:
      return destroyRelation(v, relationId(svc, other), at);
    case 10:
      return enterScope(v, relationId(svc, other), c % 2 === 0 ? unit : unitName('s2', b % 3));
    case 11:
      return leaveScope(v, relationId(svc, other), unit);
    case 12:
      return addSidecarUnit(v, unit, 's2');
    case 13: {
      const s = unitAgentStep(v, c % 2 === 0 ? unit : unitName('s2', b % 3), at);
      return s.kind === 'txn' ? s.txn : null;
    }
    case 14: {
      const s = c % 2 === 0 ? cellAgentStep(v, cell) : provisionerStep(v, cell);
      return s.kind === 'txn' ? s.txn : null;
    }
    default: {
      const jobs = dueCleanups(v, at);
      const job = jobs[b % Math.max(jobs.length, 1)];
      return job ? cleanupStep(v, job, { now: at, batchSize: 1 + (c % 3) }) : null;
    }
  }
}

/** The fixture of life-property.test.ts, as the txns that build it. */
function fixtureTxns(): ModelTxn[] {
  const m = new MemoryModelTxnRunner();
  const out: ModelTxn[] = [];
  const apply = (t: ModelTxn | null) => {
    if (!t) return;
    m.apply(t);
    out.push(t);
  };
  const v = m.model;
  for (const c of cells) apply(addCell(v, c));
  apply(addService(v, 's0', { subordinate: false }));
  apply(addService(v, 's1', { subordinate: false }));
  apply(addService(v, 's2', { subordinate: true }));
  for (const s of ['s0', 's1']) {
    for (let i = 0; i < 3; i++) {
      apply(addUnit(v, s, i));
      apply(assignUnitToCell(v, unitName(s, i), cells[i % 2]!));
    }
  }
  apply(addRelation(v, 's0', 's1', 'global'));
  apply(addRelation(v, 's0', 's2', 'container'));
  for (let i = 0; i < 3; i++) {
    apply(enterScope(v, relationId('s0', 's1'), unitName('s0', i)));
    apply(enterScope(v, relationId('s0', 's1'), unitName('s1', i)));
    if (i === 2) continue;
    apply(addSidecarUnit(v, unitName('s0', i), 's2'));
    apply(enterScope(v, relationId('s0', 's2'), unitName('s0', i)));
    apply(enterScope(v, relationId('s0', 's2'), unitName('s2', i)));
  }
  return out;
}

type Outcome = 'ok' | string;

async function outcome(run: () => Promise<void> | void): Promise<Outcome> {
  try {
    await run();
    return 'ok';
  } catch (err) {
    if (err instanceof BerthError) return err.code;
    throw err;
  }
}

const refusals = new Set(['conflict', 'already_exists', 'not_found', 'invalid_argument']);

/**
 * The conformance suite of the `ModelTxnRunner` seam: whatever runs the rules (memory, SQLite,
 * PostgreSQL) must accept and refuse exactly what the reference runner does and end in the same
 * records. The rule tests (`*-rules.test.ts`) pin the rules on the reference runner; this suite
 * pins every other runner to the reference, rule by rule and on random sequences of all of them.
 */
export function describeModelTxnRunnerContract(
  name: string,
  open: () => Promise<ModelRunnerTarget>,
  options: { readonly skip?: string; readonly runs?: number } = {},
): void {
  describe(`ModelTxnRunner contract: ${name}`, { skip: options.skip ?? false }, () => {
    let target: ModelRunnerTarget;
    before(async () => {
      target = await open();
    });
    after(async () => {
      await target?.close();
    });

    async function seed(txns: readonly ModelTxn[]): Promise<MemoryModelTxnRunner> {
      await target.reset();
      const reference = new MemoryModelTxnRunner();
      for (const t of txns) {
        reference.apply(t);
        await target.runner.run(t);
      }
      return reference;
    }

    it('random sequences of every rule, agent step and cleanup: same answers and same records as the reference', async () => {
      const cmd = fc.tuple(fc.nat(16), fc.nat(5), fc.nat(5), fc.nat(5));
      const fixture = fixtureTxns();
      const reached = new Set<string>();
      await fc.assert(
        fc.asyncProperty(fc.array(cmd, { minLength: 5, maxLength: 60 }), async (cmds) => {
          const reference = await seed(fixture);
          for (const c of cmds) {
            const view = await target.runner.read();
            let built: ModelTxn | null = null;
            let refused: string | null = null;
            try {
              built = build(view, c);
            } catch (err) {
              if (!(err instanceof BerthError && refusals.has(err.code))) throw err;
              refused = err.code;
            }
            // The runner's view must answer as the reference does: the same rule builds the same txn.
            let expected: ModelTxn | null = null;
            let expectedRefusal: string | null = null;
            try {
              expected = build(reference.model, c);
            } catch (err) {
              if (!(err instanceof BerthError)) throw err;
              expectedRefusal = err.code;
            }
            assert.equal(refused, expectedRefusal, `refusal of ${JSON.stringify(c)}`);
            assert.deepEqual(built, expected, `txn built for ${JSON.stringify(c)}`);
            if (!built) continue;
            const want = await outcome(() => reference.apply(built));
            const got = await outcome(() => target.runner.run(built));
            assert.equal(got, want, `outcome of ${built.rule}`);
            if (got === 'ok') reached.add(built.rule);
          }
          const recording: ModelTxnRunner = {
            read: () => target.runner.read(),
            run: async (t) => {
              await target.runner.run(t);
              reached.add(t.rule);
            },
          };
          const report = await settleModel(recording, { now: later, batchSize: 2 });
          assert.deepEqual(report.errors, []);
          await settleModel(reference, { now: later, batchSize: 2 });
          assert.deepEqual(await target.dump(), reference.model.toData());
        }),
        { numRuns: options.runs ?? 40 },
      );
      for (const rule of ['destroy-service: dying', 'leave-scope', 'unit-dead', 'remove-unit']) {
        assert.ok(reached.has(rule), `the generator reached ${rule}`);
      }
    });

    it('a txn whose asserts fail writes nothing and throws TxnAbortedError (retryable)', async () => {
      await seed(fixtureTxns());
      const before = await target.dump();
      const txn: ModelTxn = {
        rule: 'test',
        asserts: [
          { kind: 'life', entity: { kind: 'cell', id: 'c0' }, in: ['alive'] },
          { kind: 'count', of: 'units-of-service', id: 's0', op: 'eq', value: 99 },
        ],
        ops: [{ op: 'insert-cell', cell: { id: 'c9', life: 'alive' } }],
      };
      await assert.rejects(
        target.runner.run(txn),
        (err: unknown) => err instanceof TxnAbortedError && err.retryable,
      );
      assert.deepEqual(await target.dump(), before);
    });

    it('every assert kind holds and fails as in the reference', async () => {
      const reference = await seed(fixtureTxns());
      const u = unitName('s0', 0);
      const cases: ModelTxn['asserts'][number][] = [
        { kind: 'life', entity: { kind: 'unit', id: u }, in: ['alive'] },
        { kind: 'life', entity: { kind: 'unit', id: u }, in: ['dying', 'dead'] },
        { kind: 'life', entity: { kind: 'relation', id: relationId('s0', 's1') }, in: ['alive'] },
        { kind: 'absent', entity: { kind: 'service', id: 's3' } },
        { kind: 'absent', entity: { kind: 'service', id: 's0' } },
        { kind: 'count', of: 'units-of-service', id: 's0', op: 'eq', value: 3 },
        { kind: 'count', of: 'alive-units-of-service', id: 's0', op: 'gt', value: 2 },
        { kind: 'count', of: 'relations-of-service', id: 's0', op: 'eq', value: 2 },
        { kind: 'count', of: 'alive-relations-of-service', id: 's1', op: 'eq', value: 1 },
        { kind: 'count', of: 'units-on-cell', id: 'c0', op: 'eq', value: 5 },
        { kind: 'count', of: 'subordinates-of-unit', id: u, op: 'eq', value: 1 },
        { kind: 'count', of: 'alive-subordinates-of-unit', id: u, op: 'gt', value: 0 },
        { kind: 'count', of: 'scope-of-relation', id: relationId('s0', 's1'), op: 'eq', value: 6 },
        { kind: 'count', of: 'scopes-of-unit', id: u, op: 'eq', value: 2 },
        { kind: 'in-scope', relation: relationId('s0', 's1'), unit: u, is: true },
        { kind: 'in-scope', relation: relationId('s0', 's2'), unit: unitName('s0', 2), is: true },
        { kind: 'unit-cell', unit: u, cell_id: 'c0' },
        { kind: 'unit-cell', unit: u, cell_id: null },
        {
          kind: 'any',
          of: [
            { kind: 'absent', entity: { kind: 'cell', id: 'c0' } },
            { kind: 'count', of: 'units-on-cell', id: 'c1', op: 'gt', value: 0 },
          ],
        },
        { kind: 'any', of: [{ kind: 'absent', entity: { kind: 'cell', id: 'c0' } }] },
      ];
      for (const a of cases) {
        const txn: ModelTxn = { rule: 'probe', asserts: [a], ops: [] };
        assert.equal(
          await outcome(() => target.runner.run(txn)),
          await outcome(() => reference.apply(txn)),
          JSON.stringify(a),
        );
      }
    });

    it('an illegal life move or a removal of something referenced is refused and rolls back the ops before it', async () => {
      await seed(fixtureTxns());
      const before = await target.dump();
      const illegal: ModelTxn = {
        rule: 'test',
        asserts: [],
        ops: [
          { op: 'insert-cell', cell: { id: 'c9', life: 'alive' } },
          { op: 'set-life', entity: { kind: 'service', id: 's1' }, to: 'dead' },
        ],
      };
      assert.equal(await outcome(() => target.runner.run(illegal)), 'illegal_transition');
      const referenced: ModelTxn = {
        rule: 'test',
        asserts: [],
        ops: [
          { op: 'insert-cell', cell: { id: 'c9', life: 'alive' } },
          { op: 'set-life', entity: { kind: 'unit', id: unitName('s1', 0) }, to: 'dying' },
          { op: 'set-life', entity: { kind: 'unit', id: unitName('s1', 0) }, to: 'dead' },
          { op: 'remove', entity: { kind: 'unit', id: unitName('s1', 0) } },
        ],
      };
      assert.equal(await outcome(() => target.runner.run(referenced)), 'internal');
      assert.deepEqual(await target.dump(), before);
      // The runner's own view was not left half-applied either.
      const view = await target.runner.read();
      assert.equal(view.cell('c9'), undefined);
      assert.equal(view.unit(unitName('s1', 0))?.life, 'alive');
    });

    it('cleanup rows: writing the same job twice keeps the first; removing a missing one is no error', async () => {
      await seed([]);
      const job = {
        id: 'service-dying:x',
        kind: 'service-dying' as const,
        target: 'x',
        due_at: now.toISOString(),
      };
      await target.runner.run({ rule: 't', asserts: [], ops: [{ op: 'insert-cleanup', job }] });
      await target.runner.run({
        rule: 't',
        asserts: [],
        ops: [{ op: 'insert-cleanup', job: { ...job, due_at: later.toISOString() } }],
      });
      assert.deepEqual((await target.dump()).cleanups, [job]);
      await target.runner.run({ rule: 't', asserts: [], ops: [{ op: 'remove-cleanup', id: job.id }] });
      await target.runner.run({ rule: 't', asserts: [], ops: [{ op: 'remove-cleanup', id: job.id }] });
      assert.deepEqual((await target.dump()).cleanups, []);
    });

    it('destroying a 300-unit service goes Dying in batches and settles to nothing', async () => {
      const m = new MemoryModelTxnRunner();
      const txns: ModelTxn[] = [];
      const apply = (t: ModelTxn) => {
        m.apply(t);
        txns.push(t);
      };
      apply(addService(m.model, 'big', { subordinate: false }));
      for (let i = 0; i < 300; i++) apply(addUnit(m.model, 'big', i));
      await seed(txns);
      await runTxn(target.runner, (v) => destroyService(v, 'big', now));
      const report = await settleModel(target.runner, { now, batchSize: 100 });
      assert.deepEqual(report.errors, []);
      const data = await target.dump();
      assert.deepEqual([data.services, data.units, data.cleanups], [[], [], []]);
    });

    it('two runners on one store: a write through one is seen by the other, and racing removers never both skip the removal', async (t) => {
      if (!target.second) {
        t.skip('one runner per store here');
        return;
      }
      const other = await target.second();
      await seed([]);
      await runTxn(target.runner, (v) => addService(v, 'web', { subordinate: false }));
      for (let i = 0; i < 20; i++) await runTxn(other, (v) => addUnit(v, 'web', i));
      assert.equal([...(await target.runner.read()).unitsOfService('web')].length, 20);
      await runTxn(target.runner, (v) => destroyService(v, 'web', now));
      // Both settle at once: every unit's last step races with the other runner's.
      // A settle that runs out of rebuild attempts stops early; the final settle finishes it.
      const settle = (r: ModelTxnRunner) =>
        settleModel(r, { now, batchSize: 3 }).catch((err: unknown) => ({ errors: [err] }));
      const reports = await Promise.all([settle(target.runner), settle(other)]);
      for (const r of reports) for (const e of r.errors) assert.ok(e instanceof TxnAbortedError, String(e));
      await settleModel(target.runner, { now, batchSize: 3 });
      const data = await target.dump();
      assert.deepEqual([data.services, data.units, data.cleanups], [[], [], []]);
    });
  });
}
