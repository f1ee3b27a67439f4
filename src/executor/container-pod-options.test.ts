import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cellVolumeName } from '../bbs/index.js';
import { podSidecarOptions, podVolumeOptions } from './container-pod-options.js';

const volumes = [
  { name: 'data', kind: 'named', target: '/data' },
  { name: 'tmp', kind: 'empty', target: '/tmp', tmpfs_mb: 2, read_only: true },
] as const;

describe('a container’s pod options (issue 23)', () => {
  it("an instance's named volume is the cell's volume of its domain, name and index; empty ones are the pod's", () => {
    const tags = { kind: 'lrp', process_guid: 'db', index: 2, instance_guid: 'ig', domain: 'shop' } as const;
    assert.deepEqual(podVolumeOptions(volumes, tags), {
      volumes: [
        { name: 'data', kind: 'named', source: cellVolumeName('shop', 'data', 2), readOnly: false },
        { name: 'tmp', kind: 'empty', readOnly: true, tmpfsBytes: 2 * 1024 * 1024 },
      ],
      mounts: [
        { volume: 'data', target: '/data', readOnly: false },
        { volume: 'tmp', target: '/tmp', readOnly: true },
      ],
    });
  });

  it("a task's named volume is its domain's, without an index", () => {
    const { volumes: specs } = podVolumeOptions(volumes, { kind: 'task', task_guid: 't', domain: 'shop' });
    assert.equal(specs[0]?.source, cellVolumeName('shop', 'data'));
    assert.notEqual(specs[0]?.source, cellVolumeName('shop', 'data', 0));
  });

  it('sidecars are more apps of the pod; the main app is "app"; the first exit ends the pod', () => {
    assert.deepEqual(podSidecarOptions([]), {});
    assert.deepEqual(
      podSidecarOptions([
        {
          name: 'probe',
          image: 'bb:1',
          command: ['sh'],
          env: { A: '1' },
          mounts: [{ volume: 'logs', target: '/l', read_only: true }],
        },
      ]),
      {
        appName: 'app',
        sideApps: [
          {
            image: 'bb:1',
            name: 'probe',
            command: ['sh'],
            env: ['A=1'],
            mounts: [{ volume: 'logs', target: '/l', readOnly: true }],
          },
        ],
        exitOnFirst: true,
      },
    );
  });
});
