import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from '../core/index.js';
import { desiredWithDefaults, taskWithDefaults } from './definition-defaults.js';
import { cellVolumeName, type VolumeMount, validateVolumeMounts } from './volume-mounts.js';

const data: VolumeMount = { name: 'data', kind: 'named', target: '/data' };

/** One row per refusal: the volumes, and the field the 400 must name. */
const refused: readonly (readonly [string, readonly unknown[], string, RegExp])[] = [
  ['a bad name', [{ ...data, name: '../x' }], 'volumes[0].name', /letters, digits/],
  ['a name too long', [{ ...data, name: 'a'.repeat(41) }], 'volumes[0].name', /longer than 40/],
  ['two volumes of one name', [data, { ...data, target: '/other' }], 'volumes[1].name', /two volumes/],
  ['a host path', [{ ...data, kind: 'host' }], 'volumes[0].kind', /named or empty/],
  ['a target over /proc', [{ ...data, target: '/proc/x' }], 'volumes[0].target', /\/proc is the kernel's/],
  ['a target over /sys', [{ ...data, target: '/sys' }], 'volumes[0].target', /\/sys is the kernel's/],
  ['a target of /', [{ ...data, target: '/' }], 'volumes[0].target', /other than \//],
  ['a relative target', [{ ...data, target: 'data' }], 'volumes[0].target', /absolute/],
  ['a target that climbs', [{ ...data, target: '/a/../proc' }], 'volumes[0].target', /"\.\."/],
  [
    'two volumes at one target',
    [data, { name: 'scratch', kind: 'empty', target: '/data/' }],
    'volumes[1].target',
    /"data" is mounted at \/data already/,
  ],
  ['a named tmpfs', [{ ...data, tmpfs_mb: 8 }], 'volumes[0].tmpfs_mb', /only an empty volume/],
  [
    'too many',
    Array.from({ length: 9 }, (_, i) => ({ ...data, name: `v${i}`, target: `/v${i}` })),
    'volumes',
    /at most 8/,
  ],
];

describe('volumes of DesiredLRPs and tasks (issue 23)', () => {
  for (const [what, volumes, field, message] of refused) {
    it(`refuses ${what}, naming ${field}`, () => {
      assert.throws(
        () => validateVolumeMounts(volumes as VolumeMount[]),
        (err: unknown) =>
          err instanceof InvalidArgumentError && err.details.field === field && message.test(err.message),
      );
    });
  }

  it('accepts named and empty (tmpfs) volumes, targets in one spelling', () => {
    assert.deepEqual(
      validateVolumeMounts([
        { ...data, target: '/data/' },
        { name: 'tmp', kind: 'empty', target: '/scratch', tmpfs_mb: 16, read_only: false },
      ]),
      [data, { name: 'tmp', kind: 'empty', target: '/scratch', tmpfs_mb: 16, read_only: false }],
    );
  });

  it('the store checks them on every desire, in process too; none is stored as absent', () => {
    const lrp = { process_guid: 'p', domain: 'd', instances: 1, image: 'bb:1' } as Parameters<
      typeof desiredWithDefaults
    >[0];
    assert.throws(
      () => desiredWithDefaults({ ...lrp, volumes: [{ ...data, target: '/proc' }] }),
      /volumes\[0\]\.target/,
    );
    assert.equal('volumes' in desiredWithDefaults({ ...lrp, volumes: [] }), false);
    assert.deepEqual(desiredWithDefaults({ ...lrp, volumes: [data] }).volumes, [data]);
    const task = { task_guid: 't', domain: 'd', image: 'bb:1' } as Parameters<typeof taskWithDefaults>[0];
    assert.throws(() => taskWithDefaults({ ...task, volumes: [data, data] }), /volumes\[1\]\.name/);
  });

  it("a cell's volume is one per domain, volume and index, within the runtime's 63 characters", () => {
    const a = cellVolumeName('system-shop', 'data', 0);
    assert.notEqual(a, cellVolumeName('system-shop', 'data', 1));
    assert.notEqual(a, cellVolumeName('system-other', 'data', 0));
    assert.equal(a, cellVolumeName('system-shop', 'data', 0));
    assert.match(cellVolumeName('d'.repeat(200), 'v'.repeat(40), 99999), /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/);
  });
});
