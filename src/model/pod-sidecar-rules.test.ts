import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DeployedService, planDeploy, specVersion } from './deploy-plan.js';
import { scopedVolumeName } from './service-volumes.js';
import { InvalidDefinitionError, type SystemDefinition } from './system-definition.js';
import { parseSystemDefinition } from './system-definition-yaml.js';

const shop = (probe: string) =>
  parseSystemDefinition(`
system: shop
services:
  /web: {image: bb:1, ports: [8080]}
  /web/probe: {image: bb:1, subordinate_to: /web, colocate: pod, ${probe}}
  /log: {image: bb:1, subordinate_to: /web}
`);

function problems(yaml: string): string[] {
  try {
    parseSystemDefinition(yaml);
    return [];
  } catch (err) {
    if (!(err instanceof InvalidDefinitionError)) throw err;
    return err.problems.map((p) => `${p.path} ${p.field}: ${p.message}`);
  }
}

function deployed(def: SystemDefinition): DeployedService[] {
  return planDeploy([], def).services.flatMap((c) =>
    c.kind === 'create' ? [{ path: c.path, version: c.version, spec: c.spec }] : [],
  );
}

describe('sidecars in the principal’s pod (colocate: pod)', () => {
  it("the principal's DesiredLRP spec carries its pod sidecars; the pinned sidecar stays its own", () => {
    const web = deployed(shop('command: [sh], env: {A: "1"}')).find((s) => s.path === '/web');
    assert.deepEqual(web?.spec.pod_sidecars, [
      { name: 'probe', service: '/web/probe', image: 'bb:1', command: ['sh'], env: { A: '1' } },
    ]);
  });

  it("a pod sidecar mounts its principal's volumes by the names its principal's DesiredLRP gives them", () => {
    const def = parseSystemDefinition(`
system: shop
services:
  /web: {image: bb:1, volumes: [{name: logs, kind: empty, target: /var/log/web}]}
  /web/ship: {image: bb:1, subordinate_to: /web, colocate: pod, mounts: [{volume: logs, target: /logs, read_only: true}]}
`);
    const web = deployed(def).find((s) => s.path === '/web');
    assert.deepEqual(web?.spec.pod_sidecars?.[0]?.mounts, [
      { volume: scopedVolumeName('/web', 'logs'), target: '/logs', read_only: true },
    ]);
  });

  it('changing a pod sidecar rolls its principal (a new version); other services stay', () => {
    const before = deployed(shop('env: {A: "1"}'));
    const plan = planDeploy(before, shop('env: {A: "2"}'));
    const kinds = Object.fromEntries(plan.services.map((s) => [s.path, s.kind]));
    assert.deepEqual(kinds, {
      '/log': 'unchanged',
      '/web': 'rolling-update',
      '/web/probe': 'rolling-update',
    });
    const web = plan.services.find((s) => s.path === '/web');
    assert.deepEqual(web && 'changed' in web ? web.changed : [], ['pod_sidecars']);
  });

  it('a principal without pod sidecars keeps the version it had', () => {
    const def = shop('env: {}');
    const log = def.services.find((s) => s.path === '/log');
    assert.ok(log);
    assert.equal(specVersion(log), specVersion({ ...log }));
    assert.equal('pod_sidecars' in log, false);
  });

  const refusals: readonly (readonly [string, string, RegExp])[] = [
    ['not a sidecar', '/x: {image: bb:1, colocate: pod}', /\/x colocate: only a sidecar/],
    [
      'with ports',
      '/p: {image: bb:1, subordinate_to: /web, colocate: pod, ports: [9000]}',
      /\/p ports: a pod sidecar/,
    ],
    [
      'with a monitor',
      '/p: {image: bb:1, subordinate_to: /web, colocate: pod, monitor: {command: [/bin/true]}}',
      /\/p monitor: a pod sidecar is watched with its principal/,
    ],
    [
      'named app',
      '/app: {image: bb:1, subordinate_to: /web, colocate: pod}',
      /\/app colocate: "app" is the name/,
    ],
    [
      'two of one name',
      '/a/x: {image: bb:1, subordinate_to: /web, colocate: pod}\n  /b/x: {image: bb:1, subordinate_to: /web, colocate: pod}',
      /\/b\/x colocate: \/a\/x is also named "x" in the pod of \/web/,
    ],
    ['another value', '/p: {image: bb:1, subordinate_to: /web, colocate: cell}', /\/p colocate: /],
    [
      'mounting a volume its principal lacks',
      '/p: {image: bb:1, subordinate_to: /web, colocate: pod, mounts: [{volume: logs, target: /logs}]}',
      /\/p mounts\[0\]\.volume: \/web has no volume "logs"/,
    ],
    [
      'mounting over /proc',
      '/p: {image: bb:1, subordinate_to: /web, colocate: pod, mounts: [{volume: logs, target: /proc}]}',
      /\/p mounts\[0\]\.target: "\/proc": \/proc is the kernel's/,
    ],
    [
      'mounts without colocate',
      '/p: {image: bb:1, subordinate_to: /web, mounts: [{volume: logs, target: /l}]}',
      /\/p mounts: only a pod sidecar/,
    ],
  ];
  for (const [what, services, expected] of refusals)
    it(`refuses a colocate ${what}, naming the field`, () => {
      const found = problems(`system: shop\nservices:\n  /web: {image: bb:1}\n  ${services}\n`);
      assert.ok(
        found.some((p) => expected.test(p)),
        found.join('\n'),
      );
    });
});
