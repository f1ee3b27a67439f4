import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from '../core/index.js';
import { type PodSidecar, validatePodSidecars } from './pod-sidecars.js';

const probe: PodSidecar = { name: 'probe', image: 'bb:1' };

describe('sidecars of a DesiredLRP (issue 23)', () => {
  const rows: readonly (readonly [string, readonly PodSidecar[], string])[] = [
    ['a name that is no app name', [{ ...probe, name: 'Probe!' }], 'sidecars[0].name'],
    ['the main app’s name', [{ ...probe, name: 'app' }], 'sidecars[0].name'],
    ['two of one name', [probe, probe], 'sidecars[1].name'],
    ['no image', [{ ...probe, image: '' }], 'sidecars[0].image'],
    ['too many', ['a', 'b', 'c', 'd', 'e'].map((name) => ({ ...probe, name })), 'sidecars'],
    [
      'a mount of no volume',
      [{ ...probe, mounts: [{ volume: 'nope', target: '/x' }] }],
      'sidecars[0].mounts[0].volume',
    ],
    [
      'a mount over /sys',
      [{ ...probe, mounts: [{ volume: 'logs', target: '/sys' }] }],
      'sidecars[0].mounts[0].target',
    ],
    [
      'two mounts at one target',
      [
        {
          ...probe,
          mounts: [
            { volume: 'logs', target: '/l' },
            { volume: 'logs', target: '/l/' },
          ],
        },
      ],
      'sidecars[0].mounts[1].target',
    ],
  ];
  const volumes = [{ name: 'logs', kind: 'empty', target: '/var/log' }] as const;
  for (const [what, sidecars, field] of rows)
    it(`refuses ${what}, naming ${field}`, () => {
      assert.throws(
        () => validatePodSidecars(sidecars, volumes),
        (err: unknown) => err instanceof InvalidArgumentError && err.details.field === field,
      );
    });
  it('accepts distinct app names', () => {
    assert.doesNotThrow(() =>
      validatePodSidecars([probe, { name: 'log-ship', image: 'bb:1', env: { A: 'b' } }]),
    );
  });
});
