import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DeployedService, nextRecreateStep, planDeploy, specVersion } from './deploy-plan.js';
import { desiredVolumes, keepsData } from './service-volumes.js';
import { InvalidDefinitionError } from './system-definition.js';
import { parseSystemDefinition } from './system-definition-yaml.js';

const withDb = (volumes: string) =>
  parseSystemDefinition(`
system: shop
services:
  /db:
    image: bb:1
    volumes: ${volumes}
  /web: {image: bb:1}
  /log: {image: bb:1, subordinate_to: /web}
`);

function problems(yaml: string): { path: string; field: string; message: string }[] {
  try {
    parseSystemDefinition(yaml);
  } catch (err) {
    if (err instanceof InvalidDefinitionError) return [...err.problems];
    throw err;
  }
  return [];
}

describe('volumes of system services (issue 23)', () => {
  it('a service declares named and empty volumes; its DesiredLRPs get them scoped to the service', () => {
    const def = withDb(
      '[{name: data, kind: named, target: /var/lib/db/}, {name: tmp, kind: empty, target: /tmp, tmpfs_mb: 8}]',
    );
    const db = def.services.find((s) => s.path === '/db');
    assert.deepEqual(db?.volumes, [
      { name: 'data', kind: 'named', target: '/var/lib/db' },
      { name: 'tmp', kind: 'empty', target: '/tmp', tmpfs_mb: 8 },
    ]);
    assert.equal(keepsData(db ?? {}), true);
    const [a] = desiredVolumes('/db', db?.volumes ?? []);
    const [b] = desiredVolumes('/web', db?.volumes ?? []);
    assert.match(a?.name ?? '', /^data\.[0-9a-f]{6}$/);
    assert.notEqual(a?.name, b?.name, 'two services of a system never share a volume');
    assert.deepEqual(desiredVolumes('/db', db?.volumes ?? []), desiredVolumes('/db', db?.volumes ?? []));
  });

  it('bad volumes are refused, each naming its service and field', () => {
    const host = problems(`
system: shop
services:
  /db:
    image: bb:1
    volumes: [{name: logs, kind: host, target: /logs}]
`);
    assert.deepEqual(
      host.map((p) => [p.path, p.field, p.message]),
      [['/db', 'volumes.0.kind', "must be named or empty (a cell's host paths are not offered)"]],
    );
    const ok = problems(`
system: shop
services:
  /db:
    image: bb:1
    volumes:
      - {name: data, kind: named, target: /proc/self}
`);
    assert.deepEqual(
      ok.map((p) => [p.path, p.field]),
      [['/db', 'volumes[0].target']],
    );
    assert.match(ok[0]?.message ?? '', /\/proc is the kernel's/);
    const sidecar = problems(`
system: shop
services:
  /db: {image: bb:1}
  /log:
    image: bb:1
    subordinate_to: /db
    volumes: [{name: spool, kind: named, target: /spool}]
`);
    assert.deepEqual(
      sidecar.map((p) => [p.path, p.field]),
      [['/log', 'volumes[0].kind']],
    );
    const dup = problems(`
system: shop
services:
  /db:
    image: bb:1
    volumes: [{name: a, kind: named, target: /d}, {name: b, kind: empty, target: /d/}]
`);
    assert.deepEqual(
      dup.map((p) => [p.path, p.field]),
      [['/db', 'volumes[1].target']],
    );
  });

  it('a service without volumes keeps its version; adding or changing one is a rolling update naming volumes', () => {
    const plain = withDb('[]');
    const db = plain.services.find((s) => s.path === '/db');
    assert.equal(db?.volumes, undefined, 'an empty list is no volumes');
    const { volumes: _none, ...bare } = db ?? ({} as never);
    assert.equal(specVersion(db ?? bare), specVersion(bare));
    const current: DeployedService[] = plain.services.map((spec) => ({
      path: spec.path,
      version: specVersion(spec),
      spec,
    }));
    const plan = planDeploy(current, withDb('[{name: data, kind: named, target: /data}]'));
    const change = plan.services.find((s) => s.path === '/db');
    assert.equal(change?.kind, 'rolling-update');
    assert.deepEqual(change && 'changed' in change ? change.changed : [], ['volumes']);
  });
});

describe('nextRecreateStep: a service that keeps data rolls stop-first', () => {
  const running = (...indices: number[]) => indices.map((index) => ({ index, state: 'RUNNING' as const }));
  const rows = [
    [
      'old instances run: all stop, no new one yet',
      running(0, 1),
      [],
      { new_instances: 0, stop_old: [0, 1], done: false },
    ],
    [
      'old ones still stopping: still no new one',
      [{ index: 1, state: 'CLAIMED' as const }],
      [],
      { new_instances: 0, stop_old: [1], done: false },
    ],
    ['old ones gone: every new one starts', [], [], { new_instances: 2, stop_old: [], done: false }],
    [
      'new ones starting',
      [],
      [{ index: 0, state: 'UNCLAIMED' as const }, ...running(1)],
      { new_instances: 2, stop_old: [], done: false },
    ],
    ['new ones all RUNNING: done', [], running(0, 1), { new_instances: 2, stop_old: [], done: true }],
  ] as const;
  for (const [name, old, fresh, step] of rows)
    it(name, () => assert.deepEqual(nextRecreateStep(old, fresh, 2), step));
});
