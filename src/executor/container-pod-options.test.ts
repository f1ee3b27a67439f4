import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cellVolumeName } from '../bbs/index.js';
import {
  containerLabel,
  containerPrepareOptions,
  podSidecarOptions,
  podVolumeOptions,
} from './container-pod-options.js';

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

  it("an instance's prepare options: its env with PORT and its index, its memory, ports, and its identity label", () => {
    const tags = {
      kind: 'lrp',
      process_guid: 'web',
      index: 3,
      instance_guid: 'ig-3',
      domain: 'shop',
    } as const;
    const resource = { memory_mb: 64, disk_mb: 10 };
    const spec = { image: 'busybox', command: ['httpd', '-f'], env: { A: '1' }, ports: [8080] };
    const ports = [{ container_port: 8080, host_port: 61001 }];
    const options = containerPrepareOptions({ guid: 'web-3/x', tags, resource }, spec, ports, 4096);
    assert.deepEqual(options.env, ['A=1', 'PORT=8080', 'INSTANCE_INDEX=3', 'INSTANCE_GUID=ig-3']);
    assert.deepEqual(options.command, ['httpd', '-f']);
    assert.equal(options.name, 'web-3-x', 'a pod name keeps only name characters');
    assert.equal(options.memoryBytes, 64 * 1024 * 1024);
    assert.equal(options.net, 'private');
    assert.deepEqual(options.ports, ports);
    assert.equal(options.logSizeMax, 4096);
    assert.deepEqual(JSON.parse(options.labels?.[containerLabel] ?? '{}'), {
      guid: 'web-3/x',
      tags,
      resource,
      spec,
    });
  });

  it('a task without memory or command: no limit, the image default command, no index', () => {
    const tags = { kind: 'task', task_guid: 't', domain: 'shop' } as const;
    const spec = { image: 'busybox', env: {}, ports: [] };
    const options = containerPrepareOptions(
      { guid: 't', tags, resource: { memory_mb: 0, disk_mb: 0 } },
      spec,
      [],
      undefined,
    );
    assert.deepEqual(options.env, []);
    assert.equal(options.command, undefined);
    assert.equal(options.memoryBytes, null);
    assert.equal('logSizeMax' in options, false);
  });
});
