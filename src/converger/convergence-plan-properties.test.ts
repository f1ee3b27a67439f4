import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  actual,
  buildWorld,
  config,
  desired,
  expiredCell,
  fresh,
  liveCell,
  lrpSummary,
  now,
  tag,
  task,
  worldArb,
} from '../testing/convergence-world.js';
import { splitSettled } from '../testing/settled-instances-oracle.js';
import {
  cellDisappearedReason,
  type LRPConvergenceItem,
  planConvergence,
  planLostCells,
} from './convergence-plan.js';

/** Properties every plan has, over random clusters, and the two partial plans against the full one. */

/** Each item whole (its tag, start request, vanished cell); the order says nothing. */
const sorted = (items: readonly unknown[]) => items.map((i) => JSON.stringify(i)).sort();

describe('converger: properties', () => {
  it('never plans more starts than missing indices: creates = holes exactly, ≤ 1 start per index, none beyond N', () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const input = buildWorld(w);
        const p = planConvergence(input);
        for (const d of input.desired) {
          const have = new Set(
            input.actuals
              .filter((a) => a.process_guid === d.process_guid && !a.evacuating)
              .map((a) => a.index),
          );
          let holes = 0;
          for (let i = 0; i < d.instances; i++) if (!have.has(i)) holes++;
          const mine = p.lrps.filter((i) => i.key.process_guid === d.process_guid);
          assert.equal(mine.filter((i) => i.kind === 'create-and-start').length, holes);
          const starts = mine.filter((i) => 'start' in i);
          assert.equal(
            new Set(starts.map((i) => i.key.index)).size,
            starts.length,
            'two starts for one index',
          );
          for (const st of starts) assert.ok(st.key.index < d.instances);
        }
        for (const i of p.lrps) {
          if ('start' in i) assert.ok(input.desired.some((d) => d.process_guid === i.key.process_guid));
        }
      }),
      { numRuns: 400 },
    );
  });
  it('never stops anything when the domain is stale', () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const input = buildWorld(w);
        const p = planConvergence(input);
        const freshDomains = new Set(
          input.domains.filter((d) => Date.parse(d.fresh_until) > now.getTime()).map((d) => d.domain),
        );
        for (const i of p.lrps) {
          if (i.kind === 'stop' || i.kind === 'remove-actual')
            assert.ok(freshDomains.has(i.key.domain), `${i.kind} in stale ${i.key.domain}`);
        }
      }),
      { numRuns: 400 },
    );
  });
  it('never touches a healthy instance: RUNNING on a live cell at index < N gets no item', () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const input = buildWorld(w);
        const p = planConvergence(input);
        for (const a of input.actuals) {
          const d = input.desired.find((x) => x.process_guid === a.process_guid);
          if (
            a.evacuating ||
            a.state !== 'RUNNING' ||
            a.cell_id !== 'cell-1' ||
            d === undefined ||
            a.index >= d.instances
          )
            continue;
          const touched = p.lrps.some(
            (i) =>
              i.kind !== 'remove-evacuating' &&
              i.key.process_guid === a.process_guid &&
              i.key.index === a.index,
          );
          assert.ok(!touched, `${a.process_guid}/${a.index}`);
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe('converger: a lost-cells plan', () => {
  const lost = new Set(['cell-2', 'ghost']);
  it('is what the full plan does with the records on the lost cells, and nothing else', () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const input = buildWorld(w);
        const onLost = input.actuals.filter((a) => lost.has(a.cell_id));
        const full = planConvergence(input);
        const recordOf = (item: LRPConvergenceItem) =>
          input.actuals.find(
            (a) =>
              a.process_guid === item.key.process_guid &&
              a.index === item.key.index &&
              a.evacuating === (item.kind === 'remove-evacuating'),
          );
        const expected = full.lrps.filter((item) => {
          const record = recordOf(item);
          return record !== undefined && lost.has(record.cell_id) && item.kind !== 're-emit-start';
        });
        const got = planLostCells({ ...input, actuals: onLost });
        assert.deepEqual(sorted(got.lrps), sorted(expected));
      }),
      { numRuns: 400 },
    );
  });

  it('creates nothing for indices it was not shown, and fails the tasks that ran there', () => {
    const running = task('t', 'RUNNING', { cell_id: 'cell-2' });
    const p = planLostCells({
      desired: [desired('web', 3)],
      actuals: [actual('web', 1, 'RUNNING', { cell_id: 'cell-2' })],
      cells: [liveCell, expiredCell],
      domains: [fresh],
      tasks: [running],
      now,
      config,
    });
    assert.deepEqual(lrpSummary(p.lrps), ['unclaim-and-start web/1']);
    assert.deepEqual(p.tasks, [
      { kind: 'fail-task', taskGuid: 't', expected: tag, reason: cellDisappearedReason },
    ]);
  });
});

describe('converger: a plan without the settled instances', () => {
  it('is the full plan: settled instances make no item, and an LRP left out has no missing index', () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const input = buildWorld(w);
        const split = splitSettled(input);
        const full = planConvergence(input);
        const got = planConvergence({ ...input, actuals: split.actuals, settled: split.settled });
        assert.deepEqual(sorted(got.lrps), sorted(full.lrps));
        assert.deepEqual(sorted(got.tasks), sorted(full.tasks));
      }),
      { numRuns: 400 },
    );
  });

  it('creates the missing index of an LRP the read listed whole, and nothing for one it left out', () => {
    const running = (index: number) => actual('web', index, 'RUNNING');
    // All three indices held: the two settled ones left out, the UNCLAIMED one listed.
    const held = planConvergence({
      desired: [desired('web', 3)],
      actuals: [actual('web', 2, 'UNCLAIMED', { since: now.toISOString() })],
      settled: [{ process_guid: 'web', count: 2 }],
      cells: [liveCell],
      domains: [fresh],
      tasks: [],
      now,
      config,
    });
    assert.deepEqual(lrpSummary(held.lrps), []);
    // Index 2 has no record at all: the read lists the LRP whole, and the plan creates index 2.
    const input = {
      desired: [desired('web', 3)],
      actuals: [running(0), running(1)],
      cells: [liveCell],
      domains: [fresh],
      tasks: [],
      now,
      config,
    };
    const split = splitSettled(input);
    assert.deepEqual(split.settled, []);
    assert.equal(split.actuals.length, 2);
    assert.deepEqual(lrpSummary(planConvergence({ ...input, ...split }).lrps), ['create-and-start web/2']);
  });
});
