import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { limits } from '../core/index.js';
import {
  type DefinitionProblem,
  InvalidDefinitionError,
  storedDefinitionProblems,
  validateSystemDefinition,
} from './system-definition.js';
import { parseSystemDefinition } from './system-definition-yaml.js';

const issueExample = `
system: shop
services:
  /web/api:
    image: bb:1
    command: ["/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/"]
    instances: 2
    ports: [8080]
    monitor: {tcp: 8080}
    memory_mb: 32
    relations: ["/db"]
  /db:
    image: bb:1
    command: ["/bin/sleep", "100000"]
  /log-shipper:
    image: bb:1
    command: ["/bin/sleep", "100000"]
    subordinate_to: /web/api
jobs:
  /migrate:
    image: bb:1
    command: ["/bin/true"]
`;

function problems(value: unknown): DefinitionProblem[] {
  const r = validateSystemDefinition(value);
  assert.equal(r.ok, false, 'expected a refusal');
  return r.ok ? [] : r.problems;
}

function has(list: readonly DefinitionProblem[], path: string, field: string, message: RegExp): void {
  assert.ok(
    list.some((p) => p.path === path && p.field === field && message.test(p.message)),
    `expected ${path} ${field} ~ ${message} in ${JSON.stringify(list, null, 1)}`,
  );
}

const ok = { image: 'bb:1' };

describe('system definition (issue 8 YAML)', () => {
  it("parses the issue's example with defaults filled in", () => {
    const d = parseSystemDefinition(issueExample);
    assert.equal(d.system, 'shop');
    assert.deepEqual(
      d.services.map((s) => s.path),
      ['/db', '/log-shipper', '/web/api'],
    );
    const api = d.services.find((s) => s.path === '/web/api')!;
    assert.deepEqual(api.monitor, { tcp: 8080 });
    assert.equal(api.instances, 2);
    assert.equal(api.disk_mb, 1024);
    assert.deepEqual(api.relations, ['/db']);
    const db = d.services.find((s) => s.path === '/db')!;
    assert.equal(db.instances, 1);
    assert.equal(db.memory_mb, 128);
    assert.deepEqual(db.env, {});
    assert.equal(d.services.find((s) => s.path === '/log-shipper')?.subordinate_to, '/web/api');
    assert.deepEqual(d.jobs, [
      {
        path: '/migrate',
        image: 'bb:1',
        command: ['/bin/true'],
        env: {},
        memory_mb: 128,
        disk_mb: 1024,
        annotation: '',
      },
    ]);
  });

  it('lists every problem at once, not the first one', () => {
    const list = problems({
      system: 'Shop!',
      extra: 1,
      services: {
        '/a': { image: 'bb:1', instances: -1, ports: [80, 80, 70000], colour: 'red', relations: ['/nope'] },
        '/b': { command: 'sleep' },
      },
    });
    has(list, '/', 'system', /expected string to match/);
    has(list, '/', 'extra', /unknown field/);
    has(list, '/a', 'instances', /greater or equal to 0/);
    has(list, '/a', 'ports.2', /less or equal to 65535/);
    has(list, '/a', 'colour', /unknown field/);
    has(list, '/b', 'image', /required/);
    has(list, '/b', 'command', /array/);
    assert.ok(list.length >= 7, JSON.stringify(list));
  });

  it('checks references once the shapes are right, all of them', () => {
    const list = problems({
      system: 'shop',
      services: {
        '/a': { ...ok, relations: ['/nope', '/job', '/a', '/b', '/b'] },
        '/b': { ...ok, subordinate_to: '/job' },
        '/c': { ...ok, subordinate_to: '/missing' },
        '/d': { ...ok, subordinate_to: '/d' },
        '/e': { ...ok, ports: [80, 81, 80], monitor: { http: { port: 8080, path: '/' } } },
      },
      jobs: { '/job': ok },
    });
    has(list, '/a', 'relations', /\/nope is not a service/);
    has(list, '/a', 'relations', /\/job is a job/);
    has(list, '/a', 'relations', /relates to itself/);
    has(list, '/a', 'relations', /\/b is listed twice/);
    has(list, '/b', 'subordinate_to', /\/job is a job/);
    has(list, '/c', 'subordinate_to', /\/missing is not a service/);
    has(list, '/d', 'subordinate_to', /itself/);
    has(list, '/e', 'ports', /port 80 is listed twice/);
    has(list, '/e', 'monitor', /port 8080 is not in ports/);
  });

  it('monitor timing (issue 20): kept as given on every form of check, bad values named', () => {
    const d = parseSystemDefinition(`
system: shop
services:
  /api:
    image: bb:1
    ports: [8080]
    monitor: {tcp: 8080, timeout_ms: 3000, period_ms: 2000, failure_threshold: 5, startup_grace_ms: 20000}
  /web:
    image: bb:1
    ports: [80]
    monitor: {http: {port: 80, path: /health}, period_ms: 250}
`);
    assert.deepEqual(d.services.find((s) => s.path === '/api')?.monitor, {
      tcp: 8080,
      timeout_ms: 3000,
      period_ms: 2000,
      failure_threshold: 5,
      startup_grace_ms: 20000,
    });
    assert.deepEqual(d.services.find((s) => s.path === '/web')?.monitor, {
      http: { port: 80, path: '/health' },
      period_ms: 250,
    });
    const list = problems({
      system: 'shop',
      services: {
        '/a': { ...ok, ports: [80], monitor: { tcp: 80, period_ms: 0, timeout_ms: -5 } },
        '/b': {
          ...ok,
          monitor: { command: ['true'], failure_threshold: 1_000_000, startup_grace_ms: 10 ** 12 },
        },
      },
    });
    has(list, '/a', 'monitor.period_ms', /from 100 to/);
    has(list, '/a', 'monitor.timeout_ms', /from 1 to/);
    has(list, '/b', 'monitor.failure_threshold', /from 1 to 100/);
    has(list, '/b', 'monitor.startup_grace_ms', /from 0 to/);
  });

  it('refuses sidecar cycles and sidecars of sidecars', () => {
    const list = problems({
      system: 'shop',
      services: {
        '/a': { ...ok, subordinate_to: '/b' },
        '/b': { ...ok, subordinate_to: '/a' },
        '/p': ok,
        '/q': { ...ok, subordinate_to: '/p' },
        '/r': { ...ok, subordinate_to: '/q', instances: 3 },
      },
    });
    has(list, '/a', 'subordinate_to', /cycle: \/a → \/b → \/a/);
    has(list, '/b', 'subordinate_to', /cycle: \/b → \/a → \/b/);
    has(list, '/r', 'subordinate_to', /\/q is itself a sidecar/);
    has(list, '/r', 'instances', /one unit per principal/);
    assert.ok(!list.some((p) => p.path === '/q'), 'a sidecar of a plain service is fine');
  });

  it('a path that is both a service and a prefix of a job is fine; the same path twice is not', () => {
    const good = validateSystemDefinition({
      system: 'shop',
      services: { '/web': ok },
      jobs: { '/web/migrate': ok },
    });
    assert.equal(good.ok, true);
    has(
      problems({ system: 'shop', services: { '/web': ok }, jobs: { '/web': ok } }),
      '/web',
      '',
      /both as a service and as a job/,
    );
    assert.throws(
      () => parseSystemDefinition('system: shop\nservices:\n  /a: {image: x}\n  /a: {image: y}\n'),
      (err: unknown) =>
        err instanceof InvalidDefinitionError &&
        /YAML line 4: Map keys must be unique/.test(err.problems[0]?.message ?? ''),
    );
  });

  it('refuses bad paths, bad monitors, bad env names and fields that only services have on jobs', () => {
    const list = problems({
      system: 'shop',
      services: {
        web: ok,
        '/Web': ok,
        '/a': { ...ok, monitor: { udp: 53 }, env: { 'BAD-NAME': 'x', GOOD: 1 } },
      },
      jobs: { '/j': { ...ok, ports: [80], instances: 2 } },
    });
    has(list, 'web', '', /paths like/);
    has(list, '/Web', '', /paths like/);
    has(list, '/a', 'monitor', /one of \{tcp/);
    has(list, '/a', 'env.BAD-NAME', /variable name/);
    has(list, '/a', 'env.GOOD', /string/);
    has(list, '/j', 'ports', /unknown field/);
    has(list, '/j', 'instances', /unknown field/);
  });

  it('the error is an invalid_argument listing path, field and reason on its own line each', () => {
    try {
      parseSystemDefinition('system: shop\nservices:\n  /a: {instances: two}\n');
      assert.fail('expected a refusal');
    } catch (err) {
      assert.ok(err instanceof InvalidDefinitionError);
      assert.equal(err.code, 'invalid_argument');
      assert.match(
        err.message,
        /2 problem\(s\)\n {2}\/a image: required\n {2}\/a instances: expected integer/,
      );
    }
  });

  it('refuses a document that is not a mapping', () => {
    assert.throws(() => parseSystemDefinition('- a\n- b\n'), InvalidDefinitionError);
  });

  it('bounds every count and size (issue 17): instances, units, memory, ports, routes, paths', () => {
    const list = problems({
      system: 's',
      services: {
        '/a': { ...ok, instances: 2 ** 53 },
        '/b': { ...ok, memory_mb: 2 ** 40, ports: Array.from({ length: 65 }, (_, i) => i + 1) },
        '/c': { ...ok, routes: { r: 'x'.repeat(limits.maxRoutesBytes) } },
        [`/${Array.from({ length: 40 }, () => 'abcd').join('/')}`]: ok,
      },
    });
    has(list, '/a', 'instances', new RegExp(`less or equal to ${limits.maxInstances}`));
    has(list, '/b', 'memory_mb', new RegExp(String(limits.maxMemoryMb)));
    has(list, '/b', 'ports', /64/);
    has(list, '/c', 'routes', new RegExp(String(limits.maxRoutesBytes)));
    assert.ok(list.some((p) => new RegExp(`at most ${limits.maxTreePathLength} characters`).test(p.message)));
    // 6,000 principal units and 6,000 sidecar units: each is a row the deploy writes.
    const units = problems({
      system: 's',
      services: { '/web': { ...ok, instances: 6000 }, '/side': { ...ok, subordinate_to: '/web' } },
    });
    has(units, '/', 'services', new RegExp(`12000 units .* at most ${limits.maxSystemUnits}`));
  });

  it('refuses NUL, unpaired surrogates and deep nesting that YAML can spell', () => {
    const nul = () => parseSystemDefinition('system: s\nservices:\n  /web: {image: "b\\0"}\n');
    assert.throws(nul, /services\.\/web\.image: contains U\+0000/);
    const surrogate = () =>
      parseSystemDefinition('system: s\nservices:\n  /web: {image: b, annotation: "\\uD800"}\n');
    assert.throws(surrogate, /unpaired UTF-16 surrogate/);
    const deep = `system: s\nservices:\n  /web: {image: b, routes: {r: ${'['.repeat(40)}${']'.repeat(40)}}}\n`;
    assert.throws(() => parseSystemDefinition(deep), new RegExp(`deeper than ${limits.maxJsonDepth}`));
    const deeper = `system: s\nservices:\n  /web: {image: b, routes: {r: ${'['.repeat(20_000)}${']'.repeat(20_000)}}}\n`;
    assert.throws(() => parseSystemDefinition(deeper), InvalidDefinitionError);
  });

  it('a stored definition is checked by the same rules: a valid one passes as it was normalized', () => {
    assert.deepEqual(storedDefinitionProblems(parseSystemDefinition(issueExample)), []);
    const stored = parseSystemDefinition(issueExample);
    const oversized = {
      ...stored,
      services: stored.services.map((svc) => (svc.path === '/db' ? { ...svc, instances: 2 ** 53 } : svc)),
    };
    const found = storedDefinitionProblems(oversized);
    assert.ok(
      found.some((p) => p.path === '/db' && p.field === 'instances'),
      JSON.stringify(found),
    );
    assert.deepEqual(storedDefinitionProblems({ system: 's' } as never).length, 1);
  });

  it('secrets: by file, by value or sealed; names are variable names, never also in env; services only', () => {
    const d = parseSystemDefinition(
      'system: s\nservices:\n  /db:\n    image: b\n    env: {MODE: x}\n    secrets: {DB_PASSWORD: {file: ./pw}}\n  /web: {image: b}\n',
    );
    assert.deepEqual(d.services[0]?.secrets, { DB_PASSWORD: { file: './pw' } });
    assert.equal('secrets' in d.services[1]!, false, 'no secrets: no field (stored rows stay as they were)');
    const svc = (secrets: unknown, env?: unknown) => ({
      system: 's',
      services: { '/db': { image: 'b', secrets, ...(env ? { env } : {}) } },
    });
    assert.equal(validateSystemDefinition(svc({ A: { value: 'v' } })).ok, true);
    assert.equal(validateSystemDefinition(svc({ A: { sealed: 'v1:x', digest: 'a'.repeat(32) } })).ok, true);
    has(problems(svc({ A: 'plain' })), '/db', 'secrets.A', /\{file: PATH\}/);
    has(problems(svc({ A: { file: './x', value: 'v' } })), '/db', 'secrets.A', /\{file: PATH\}/);
    has(problems(svc({ 'NOT-A-NAME': { value: 'v' } })), '/db', 'secrets.NOT-A-NAME', /variable name/);
    has(problems(svc({ A: { value: 'v' } }, { A: '1' })), '/db', 'secrets.A', /also in env/);
    const job = { system: 's', jobs: { '/j': { image: 'b', secrets: { A: { value: 'v' } } } } };
    has(problems(job), '/j', 'secrets', /unknown field/);
    // Problems name the field, never the value.
    const refused = problems(svc({ A: { value: 'hunter2', extra: 1 } }));
    assert.ok(!JSON.stringify(refused).includes('hunter2'), JSON.stringify(refused));
  });
});
