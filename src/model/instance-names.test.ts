import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  instanceKey,
  isServiceOf,
  jobTaskGuid,
  jobVersion,
  modelServiceName,
  parseUnitName,
  servicePathOf,
  serviceProcessGuid,
  sidecarUnitGuid,
  sidecarUnitIndex,
  systemDomain,
  systemLabel,
  systemOfDomain,
  unitLabel,
  unitName,
  unitOfInstance,
} from './instance-names.js';
import type { JobDefinition } from './system-definition.js';
import { relationEndpoints, relationId } from './txn-parts.js';

const segment = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?$/);
const system = segment;
const treePath = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => `/${s.join('/')}`);
const version = fc.stringMatching(/^[0-9a-f]{12}$/);
const index = fc.nat({ max: 10_000 });

const job: JobDefinition = {
  path: '/migrate',
  image: 'bb:1',
  command: ['/bin/true'],
  env: {},
  memory_mb: 128,
  disk_mb: 1024,
  annotation: '',
};

describe('instance names: one spelling, formatted and parsed here', () => {
  it('a system domain round-trips; a domain that is not a system’s is foreign', () => {
    fc.assert(fc.property(system, (s) => systemOfDomain(systemDomain(s)) === s));
    assert.equal(systemDomain('shop'), 'system-shop');
    assert.equal(systemOfDomain('apps'), undefined);
    assert.equal(systemOfDomain('system-'), undefined);
    assert.equal(systemOfDomain('systems-shop'), undefined);
  });

  it('a model service name round-trips to its path; another system’s name is foreign', () => {
    fc.assert(
      fc.property(system, treePath, (s, p) => {
        const name = modelServiceName(s, p);
        return isServiceOf(s, name) && servicePathOf(s, name) === p && systemLabel(s, name) === p;
      }),
    );
    assert.equal(modelServiceName('shop', '/web/api'), 'shop:/web/api');
    assert.equal(servicePathOf('shop', 'shopping:/web'), undefined);
    assert.equal(isServiceOf('shop', 'shopping:/web'), false);
    assert.equal(systemLabel('shop', 'other:/web'), 'other:/web', 'a foreign name is shown whole');
  });

  it('a unit name round-trips to its service and index; names without an index are refused', () => {
    fc.assert(
      fc.property(system, treePath, index, (s, p, i) => {
        const parsed = parseUnitName(unitName(modelServiceName(s, p), i));
        return parsed?.service === modelServiceName(s, p) && parsed.index === i;
      }),
    );
    assert.equal(unitName('shop:/web', 2), 'shop:/web#2');
    assert.equal(unitLabel('shop', 'shop:/web/api#2'), '/web/api#2');
    for (const foreign of ['shop:/web', '#3', 'shop:/web#', 'shop:/web#x', 'shop:/web#-1'])
      assert.equal(parseUnitName(foreign), undefined, foreign);
  });

  it('a process guid is one segment per path segment plus the version, so /a-b and /a/b differ', () => {
    assert.equal(serviceProcessGuid('shop', '/web/api', 'abc123def456'), 'shop.web.api.abc123def456');
    assert.notEqual(serviceProcessGuid('s', '/a-b', 'v'), serviceProcessGuid('s', '/a/b', 'v'));
  });

  it('a sidecar unit guid round-trips to its index under its base; other guids are not its units', () => {
    fc.assert(
      fc.property(system, treePath, version, index, (s, p, v, i) => {
        const base = serviceProcessGuid(s, p, v);
        return sidecarUnitIndex(base, sidecarUnitGuid(base, i)) === i;
      }),
    );
    const base = serviceProcessGuid('shop', '/log', '0f0f0f0f0f0f');
    assert.equal(sidecarUnitGuid(base, 3), 'shop.log.0f0f0f0f0f0f.u3');
    assert.equal(sidecarUnitIndex(base, base), undefined, 'the base itself is no unit of it');
    assert.equal(sidecarUnitIndex(base, `${base}.u`), undefined);
    assert.equal(sidecarUnitIndex(base, `${base}.ux`), undefined);
    assert.equal(sidecarUnitIndex(base, `${base}0.u1`), undefined, 'a longer version is another base');
    assert.equal(
      sidecarUnitIndex(serviceProcessGuid('shop', '/log', '1f0f0f0f0f0f'), sidecarUnitGuid(base, 1)),
      undefined,
    );
  });

  it('an instance maps to its unit from the guid alone (principals by index, sidecars by .uN)', () => {
    const guid = serviceProcessGuid('shop', '/web/api', 'abc123def456');
    assert.equal(unitOfInstance('shop', guid, 2), 'shop:/web/api#2');
    assert.equal(
      unitOfInstance('shop', sidecarUnitGuid(serviceProcessGuid('shop', '/u1', '0f0f0f0f0f0f'), 3), 0),
      'shop:/u1#3',
    );
    assert.equal(unitOfInstance('shop', serviceProcessGuid('shop', '/u1', '0f0f0f0f0f0f'), 4), 'shop:/u1#4');
    assert.equal(unitOfInstance('shop', 'shopping.web.abc', 0), undefined);
    assert.equal(unitOfInstance('shop', 'shop.abc', 0), undefined);
  });

  it('every service instance and sidecar unit maps back to the unit it was named for', () => {
    fc.assert(
      fc.property(system, treePath, version, index, (s, p, v, i) => {
        const base = serviceProcessGuid(s, p, v);
        const unit = unitName(modelServiceName(s, p), i);
        return unitOfInstance(s, base, i) === unit && unitOfInstance(s, sidecarUnitGuid(base, i), 0) === unit;
      }),
    );
  });

  it('a job’s task guid carries its version, which changes with its definition', () => {
    assert.equal(jobTaskGuid('shop', job), `shop.migrate.${jobVersion(job)}`);
    assert.match(jobVersion(job), /^[0-9a-f]{12}$/);
    assert.notEqual(jobVersion({ ...job, image: 'bb:2' }), jobVersion(job));
  });

  it('an instance key names a guid and an index', () => {
    assert.equal(instanceKey('shop.web.v', 3), 'shop.web.v/3');
  });

  it('a relation id round-trips to its two services, sorted', () => {
    fc.assert(
      fc.property(system, treePath, treePath, (s, a, b) => {
        const [x, y] = [modelServiceName(s, a), modelServiceName(s, b)];
        return relationEndpoints(relationId(x, y)).join(' ') === [x, y].sort().join(' ');
      }),
    );
  });
});
