import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  type DeployedService,
  nextRollingStep,
  planDeploy,
  type RollingInstance,
  specVersion,
} from './deploy-plan.js';
import type { ServiceDefinition } from './system-definition.js';
import { parseSystemDefinition } from './system-definition-yaml.js';

const base = parseSystemDefinition(`
system: shop
services:
  /web/api: {image: bb:1, command: [httpd], instances: 2, ports: [8080], relations: [/db]}
  /db: {image: bb:1}
  /log: {image: bb:1, subordinate_to: /web/api}
  /a/b: {image: bb:1}
`);

function deployed(def = base): DeployedService[] {
  return def.services.map((spec) => ({ path: spec.path, version: specVersion(spec), spec }));
}

function withService(path: string, change: Partial<ServiceDefinition>) {
  return { ...base, services: base.services.map((s) => (s.path === path ? { ...s, ...change } : s)) };
}

function kinds(plan: ReturnType<typeof planDeploy>): Record<string, string> {
  return Object.fromEntries(plan.services.map((s) => [s.path, s.kind]));
}

describe('planDeploy', () => {
  it('a first deploy creates every service and its relations', () => {
    const plan = planDeploy([], base);
    assert.deepEqual(kinds(plan), {
      '/a/b': 'create',
      '/db': 'create',
      '/log': 'create',
      '/web/api': 'create',
    });
    assert.deepEqual(plan.add_relations, [['/db', '/web/api']]);
  });

  it('the same definition again changes nothing', () => {
    const plan = planDeploy(deployed(), base);
    assert.ok(plan.services.every((s) => s.kind === 'unchanged'));
    assert.deepEqual(plan.add_relations, []);
  });

  for (const [field, value] of [
    ['instances', 5],
    ['routes', { 'api.shop': 8080 }],
    ['annotation', 'v2 rollout'],
  ] as const) {
    it(`only ${field} changed: update in place, same version`, () => {
      const plan = planDeploy(deployed(), withService('/web/api', { [field]: value }));
      const change = plan.services.find((s) => s.path === '/web/api');
      assert.equal(change?.kind, 'update-in-place');
      if (change?.kind === 'update-in-place') assert.deepEqual(change.changed, [field]);
    });
  }

  for (const [field, value] of [
    ['image', 'bb:2'],
    ['command', ['httpd', '-v']],
    ['env', { A: '1' }],
    ['ports', [8080, 9090]],
    ['monitor', { tcp: 8080 }],
    ['memory_mb', 64],
    ['disk_mb', 10],
  ] as const) {
    it(`${field} changed: rolling update to a new DesiredLRP version`, () => {
      const plan = planDeploy(deployed(), withService('/web/api', { [field]: value }));
      const change = plan.services.find((s) => s.path === '/web/api');
      assert.equal(change?.kind, 'rolling-update');
      if (change?.kind === 'rolling-update') {
        assert.notEqual(change.version, change.from_version);
        assert.deepEqual(change.changed, [field]);
      }
    });
  }

  it('a service becoming a sidecar is replaced, not rolled', () => {
    const plan = planDeploy(deployed(), withService('/db', { subordinate_to: '/web/api' }));
    assert.equal(kinds(plan)['/db'], 'replace');
  });

  it('deploying at / destroys services the definition no longer has, and their relations', () => {
    const def = {
      ...base,
      services: base.services.filter((s) => s.path !== '/db').map((s) => ({ ...s, relations: [] })),
    };
    const plan = planDeploy(deployed(), def, '/');
    assert.equal(kinds(plan)['/db'], 'destroy');
    assert.deepEqual(plan.remove_relations, [['/db', '/web/api']]);
  });

  it('deploying at /a touches only the subtree under /a', () => {
    const def = { ...base, services: base.services.filter((s) => s.path !== '/a/b' && s.path !== '/db') };
    const plan = planDeploy(deployed(), def, '/a');
    assert.deepEqual(kinds(plan), { '/a/b': 'destroy' }, '/db is outside /a: left alone');
    const changed = withService('/db', { image: 'bb:9' });
    assert.deepEqual(kinds(planDeploy(deployed(), changed, '/a')), { '/a/b': 'unchanged' });
  });

  it('versions depend on the LRP fields only, not on key order', () => {
    const s = base.services[0]!;
    assert.equal(specVersion(s), specVersion({ ...s, instances: 40, annotation: 'x' }));
    assert.equal(
      specVersion({ ...s, env: { A: '1', B: '2' } }),
      specVersion({ ...s, env: { B: '2', A: '1' } }),
    );
  });

  it('changing env or a secret rolls the service: neither is in the in-place set (issue 19)', () => {
    const sealed = (digest: string) => ({ sealed: `v1:${digest}`, digest: digest.padEnd(32, '0') });
    assert.deepEqual(kinds(planDeploy(deployed(), withService('/db', { env: { MODE: 'x' } }))), {
      ...kinds(planDeploy(deployed(), base)),
      '/db': 'rolling-update',
    });
    const v1 = withService('/db', { secrets: { PW: sealed('a') } });
    const plan = planDeploy(deployed(v1), withService('/db', { secrets: { PW: sealed('b') } }));
    const db = plan.services.find((c) => c.path === '/db');
    assert.equal(db?.kind, 'rolling-update');
    assert.deepEqual(db && 'changed' in db ? db.changed : [], ['secrets']);
    // The same value sealed again (another ciphertext, the same keyed digest) changes nothing.
    const again = withService('/db', { secrets: { PW: { ...sealed('a'), sealed: 'v1:other' } } });
    assert.equal(kinds(planDeploy(deployed(v1), again))['/db'], 'unchanged');
    // A service without secrets keeps the version it had before secrets existed.
    const db0 = base.services.find((s) => s.path === '/db')!;
    assert.equal(specVersion(db0), specVersion({ ...db0 }));
    assert.notEqual(specVersion(db0), specVersion({ ...db0, secrets: { PW: sealed('a') } }));
    assert.throws(() => specVersion({ ...db0, secrets: { PW: { value: 'clear' } } }), /not sealed/);
  });
});

function running(n: number, from = 0): RollingInstance[] {
  return Array.from({ length: n }, (_, i) => ({ index: from + i, state: 'RUNNING' as const }));
}

describe('nextRollingStep', () => {
  it('starts with one surge instance and stops nothing', () => {
    assert.deepEqual(nextRollingStep(running(3), [], 3), { new_instances: 1, stop_old: [], done: false });
  });
  it('a new instance that is only CLAIMED does not let an old one stop', () => {
    assert.deepEqual(nextRollingStep(running(3), [{ index: 0, state: 'CLAIMED' }], 3).stop_old, []);
  });
  it('once a new instance is RUNNING, the highest old index stops and the next new one starts', () => {
    assert.deepEqual(nextRollingStep(running(3), running(1), 3), {
      new_instances: 2,
      stop_old: [2],
      done: false,
    });
  });
  it('old instances that are not RUNNING are stopped at once', () => {
    const old: RollingInstance[] = [...running(2), { index: 2, state: 'CRASHED' }];
    assert.deepEqual(nextRollingStep(old, [], 3).stop_old, [2]);
  });
  it('done when the new version runs all desired instances and no old one is left', () => {
    assert.deepEqual(nextRollingStep(running(1), running(3), 3), {
      new_instances: 3,
      stop_old: [0],
      done: true,
    });
    assert.equal(nextRollingStep([], running(3), 3).done, true);
  });
  it('property: RUNNING never drops below min(desired, RUNNING before); new count never exceeds desired', () => {
    const state = fc.constantFrom('UNCLAIMED', 'CLAIMED', 'RUNNING', 'CRASHED') as fc.Arbitrary<
      RollingInstance['state']
    >;
    const instances = fc
      .array(state, { maxLength: 8 })
      .map((s) => s.map((st, index) => ({ index, state: st })));
    fc.assert(
      fc.property(
        instances,
        instances,
        fc.nat(8),
        fc.integer({ min: 1, max: 3 }),
        (old, neu, desired, surge) => {
          const step = nextRollingStep(old, neu, desired, surge);
          const run = (xs: readonly RollingInstance[]) => xs.filter((i) => i.state === 'RUNNING').length;
          const before = run(old) + run(neu);
          const stoppedRunning = old.filter(
            (i) => i.state === 'RUNNING' && step.stop_old.includes(i.index),
          ).length;
          assert.ok(before - stoppedRunning >= Math.min(desired, before));
          assert.ok(step.new_instances <= Math.max(desired, 0));
          assert.ok(step.stop_old.every((i) => old.some((o) => o.index === i)));
        },
      ),
      { numRuns: 1000 },
    );
  });
  it('property: a rollout where started instances come up converges, RUNNING ≥ desired throughout', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 4 }), (desired, surge) => {
        let old = running(desired);
        let neu: RollingInstance[] = [];
        for (let tick = 0; tick < 3 * desired + 3; tick++) {
          const step = nextRollingStep(old, neu, desired, surge);
          if (step.done) return;
          old = old.filter((i) => !step.stop_old.includes(i.index));
          assert.ok(old.length + neu.filter((i) => i.state === 'RUNNING').length >= desired, `tick ${tick}`);
          // What was started last tick is RUNNING now; the rest of new_instances start now.
          neu = Array.from({ length: step.new_instances }, (_, index) => ({
            index,
            state: index < neu.length ? ('RUNNING' as const) : ('CLAIMED' as const),
          }));
        }
        assert.fail(`no convergence for desired ${desired}, surge ${surge}`);
      }),
    );
  });
});
