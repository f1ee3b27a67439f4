import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { BerthError } from '../core/index.js';
import { ModelBuilder } from '../testing/model-builder.js';
import { cellAgentStep, provisionerStep, unitAgentStep } from './agent-rules.js';
import { addCell, assignUnitToCell, destroyCell } from './cell-rules.js';
import { cleanupStep, dueCleanups } from './cleanup-jobs.js';
import { type LifeStep, lifeRank } from './life.js';
import { settleModel } from './model-settler.js';
import type { ModelTxn, ModelView } from './model-types.js';
import { addRelation, destroyRelation, enterScope, leaveScope } from './relation-rules.js';
import { addService, destroyService } from './service-rules.js';
import { addSidecarUnit } from './sidecar-rules.js';
import { relationId, unitName } from './txn-parts.js';
import { addUnit, destroyUnit, forceDestroyUnit } from './unit-rules.js';

const now = new Date('2024-05-01T12:00:00.000Z');
const later = new Date('2024-05-01T13:00:00.000Z');
const cells = ['c0', 'c1'];
// s2 is a sidecar service; s3 starts absent.
const services = ['s0', 's1', 's2', 's3'];
const unitOf = (s: number, i: number) => unitName(services[s]!, i);

type Cmd = readonly [number, number, number, number];

/** Rule refusals are answers, not failures; anything else (internal, illegal_transition) is a bug. */
const refusals = new Set(['conflict', 'already_exists', 'not_found', 'invalid_argument']);

function build(v: ModelView, [kind, a, b, c]: Cmd): ModelTxn | null {
  const cell = cells[a % cells.length]!;
  const svc = services[a % services.length]!;
  const other = services[b % services.length]!;
  const unit = unitOf(a % 2, b % 3);
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

/** Every entity's life step by `kind:id`, absent ones as `removed`. */
function lives(v: ModelView): Map<string, LifeStep> {
  const out = new Map<string, LifeStep>();
  for (const c of v.cells()) out.set(`cell:${c.id}`, c.life);
  for (const s of v.services()) {
    out.set(`service:${s.name}`, s.life);
    for (const u of v.unitsOfService(s.name)) out.set(`unit:${u}`, v.unit(u)!.life);
  }
  for (const r of v.relations()) out.set(`relation:${r.id}`, r.life);
  return out;
}

function checkIntegrity(v: ModelView): void {
  for (const s of v.services()) {
    for (const name of v.unitsOfService(s.name)) {
      const u = v.unit(name)!;
      if (u.cell_id !== null) assert.ok(v.cell(u.cell_id), `${name}'s cell exists`);
      if (u.principal !== null) assert.ok(v.unit(u.principal), `${name}'s principal exists`);
      if (u.life === 'dead') assert.equal(v.count('scopes-of-unit', name), 0, `Dead ${name} is in no scope`);
      if (u.life === 'dead')
        assert.equal(v.count('subordinates-of-unit', name), 0, `Dead ${name} has no sidecars`);
    }
  }
  for (const r of v.relations())
    for (const s of r.endpoints) assert.ok(v.service(s), `${r.id}'s ${s} exists`);
  for (const c of v.cells()) if (c.life !== 'alive') assert.equal(v.count('units-on-cell', c.id), 0);
}

/** Two cells, s0 and s1 related with units in scope, s2 a sidecar of s0: the commands start here. */
function fixture(): ModelBuilder {
  const m = new ModelBuilder().cell('c0').cell('c1').service('s0').service('s1').service('s2', true);
  m.units('s0', 3, cells).units('s1', 3, cells).relate('s0', 's1').relate('s0', 's2', 'container');
  for (let i = 0; i < 3; i++) {
    m.enter('s0', 's1', unitName('s0', i)).enter('s0', 's1', unitName('s1', i));
    // s0#2 waits for its sidecar, which a command may add.
    if (i === 2) continue;
    m.sidecar(unitName('s0', i), 's2');
    m.enter('s0', 's2', unitName('s0', i)).enter('s0', 's2', unitName('s2', i));
  }
  return m;
}

describe('property: life never goes back (seed 003 "No such thing can ever change to an earlier state")', () => {
  it('whatever sequence of operations, agents and cleanups runs, every entity only moves forward', async () => {
    const cmd = fc.tuple(fc.nat(16), fc.nat(5), fc.nat(5), fc.nat(5));
    const applied = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 10, maxLength: 150, size: 'max' }), async (cmds) => {
        const m = fixture();
        let seen = lives(m.view);
        for (const c of cmds) {
          let t: ModelTxn | null = null;
          try {
            t = build(m.view, c);
          } catch (err) {
            if (err instanceof BerthError && refusals.has(err.code)) continue;
            throw err;
          }
          if (t) {
            m.runner.apply(t);
            applied.set(t.rule, (applied.get(t.rule) ?? 0) + 1);
          }
          const next = lives(m.view);
          for (const [key, before] of seen) {
            const after = next.get(key) ?? 'removed';
            assert.ok(
              lifeRank(after) >= lifeRank(before),
              `${key} went from ${before} back to ${after} (${t?.rule})`,
            );
          }
          // A name that reappears is a new incarnation, and every incarnation starts Alive.
          for (const [key, after] of next)
            if (!seen.has(key)) assert.equal(after, 'alive', `${key} was born ${after}`);
          checkIntegrity(m.view);
          seen = next;
        }
        // Whatever state it ended in, the agents and cleanups settle it without errors.
        const report = await settleModel(m.runner, { now: later, batchSize: 2 });
        assert.deepEqual(report.errors, []);
        checkIntegrity(m.view);
        // ... and nothing is left half-way: whatever started dying has been removed.
        for (const [key, life] of lives(m.view)) assert.equal(life, 'alive', `${key} settled as ${life}`);
      }),
      { numRuns: 300 },
    );
    // The generator must reach the rules that matter, or the property says little.
    const reached = [...applied.keys()].sort();
    for (const rule of [
      'destroy-service: dying',
      'destroy-service: remove at once',
      'destroy-relation: dying',
      'add-sidecar-unit',
      'leave-scope',
      'unit-dead',
      'remove-unit',
      'cleanup force-unit: remove',
      'cleanup service-dying: units',
    ]) {
      assert.ok(reached.includes(rule), `the generator reached ${rule}`);
    }
  });
});
