import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { PodInfo, PodManifest } from '../runtime/index.js';
import type { ContainerPod } from './container-pods.js';
import { ttyExecProcess } from './rep-exec.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-rep-exec-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A bundle's config.json process, as the runtime writes one (fields a TTY exec must keep). */
function bundleProcess(env: string[]) {
  return {
    terminal: false,
    user: { uid: 0, gid: 0, additionalGids: [10] },
    args: ['/bin/app'],
    env,
    cwd: '/srv',
    capabilities: { bounding: ['CAP_KILL'], effective: ['CAP_KILL'] },
    rlimits: [{ type: 'RLIMIT_NOFILE', hard: 1024, soft: 1024 }],
    noNewPrivileges: true,
  };
}

const app = { args: ['/bin/app'], env: ['APP=1'], cwd: '/srv', user: { uid: 1000, gid: 1000 } };
const manifest = {
  uuid: 'pod-uuid',
  name: 'pod',
  hostname: 'pod',
  image: { ref: 'busybox', id: 'sha256:x', rootfs: '/x' },
  app,
  sideApps: [
    {
      ...app,
      name: 'side',
      env: ['SIDE=1'],
      cwd: '/side',
      image: { ref: 'b', id: 'sha256:y', rootfs: '/y' },
    },
  ],
  net: 'host',
  ports: [],
  memoryBytes: null,
  pidsLimit: null,
  labels: {},
  created: '2026-11-28T00:00:00Z',
} as unknown as PodManifest;
const found = { pod: { uuid: 'pod-uuid', manifest } as unknown as PodInfo, dir } as ContainerPod;
writeFileSync(join(dir, 'config.json'), JSON.stringify({ process: bundleProcess(['PATH=/bin']) }));
mkdirSync(join(dir, 'apps', 'side'), { recursive: true });
writeFileSync(
  join(dir, 'apps', 'side', 'config.json'),
  JSON.stringify({ process: bundleProcess(['PATH=/sbin']) }),
);

const spec = {
  guid: 'g',
  command: ['/bin/sh', '-c', 'stty size'],
  tty: true,
  stdin: true,
  size: { cols: 100, rows: 30 },
};

describe("a TTY exec's OCI process", () => {
  it("carries the caller's window size, so the pty has it before the command's first instruction", () => {
    const { process } = ttyExecProcess(found, spec);
    assert.deepEqual(process.consoleSize, { height: 30, width: 100 });
    assert.equal(process.terminal, true);
    assert.deepEqual(process.args, spec.command);
  });

  it("keeps the app's process (capabilities, rlimits, groups) and sets what runc exec's flags would", () => {
    const tty = ttyExecProcess(found, spec);
    const p = tty.process as unknown as ReturnType<typeof bundleProcess>;
    assert.equal(tty.containerId, 'pod-uuid');
    assert.deepEqual(p.capabilities, { bounding: ['CAP_KILL'], effective: ['CAP_KILL'] });
    assert.equal(p.rlimits.length, 1);
    assert.equal(p.noNewPrivileges, true);
    assert.deepEqual(p.user, { uid: 1000, gid: 1000, additionalGids: [10] });
    assert.deepEqual(p.env, ['PATH=/bin', 'APP=1']);
    assert.equal(p.cwd, '/srv');
  });

  it("of a pod's other app is that app's container and bundle", () => {
    const tty = ttyExecProcess(found, { ...spec, app: 'side' });
    assert.equal(tty.containerId, 'pod-uuid.side');
    assert.deepEqual(tty.process.env, ['PATH=/sbin', 'SIDE=1']);
    assert.equal(tty.process.cwd, '/side');
  });

  it("without a size has none (runc then takes the outer terminal's)", () => {
    const { size: _, ...unsized } = spec;
    assert.equal(ttyExecProcess(found, unsized).process.consoleSize, undefined);
  });

  it('is a conflict, not a crash, when the bundle is gone', () => {
    const gone = { ...found, dir: join(dir, 'nosuch') };
    assert.throws(
      () => ttyExecProcess(gone, spec),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'conflict');
        assert.match(err.message, /Container g has no readable bundle/);
        return true;
      },
    );
  });
});
