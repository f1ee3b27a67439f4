import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { podCgroupExists, removePodCgroup } from './pod-cgroup.js';

/**
 * removePodCgroup on the host's real cgroup tree: runc makes `/berth/<uuid>/app` (and, in a pod of
 * several apps, `app-<name>` beside it) in every hierarchy; all of it goes, and nothing else.
 */
const root = '/sys/fs/cgroup';
const v2 = existsSync(join(root, 'cgroup.controllers'));
const hierarchies = v2
  ? ['']
  : readdirSync(root).filter((controller) => existsSync(join(root, controller, 'cgroup.procs')));

function podDirs(uuid: string): string[] {
  return hierarchies.map((h) => join(root, h, 'berth', uuid));
}

describe('removePodCgroup', { skip: hierarchies.length === 0 && 'no cgroup hierarchy here' }, () => {
  it("removes a single-app pod's cgroup in every hierarchy", () => {
    const uuid = randomUUID();
    for (const dir of podDirs(uuid)) mkdirSync(join(dir, 'app'), { recursive: true });
    assert.ok(podCgroupExists(uuid));
    removePodCgroup(uuid);
    for (const dir of podDirs(uuid)) assert.ok(!existsSync(dir), `${dir} is gone`);
    assert.ok(!podCgroupExists(uuid));
  });

  it("removes the cgroups of a pod's other apps, which keep the pod's own cgroup busy", () => {
    const uuid = randomUUID();
    const keep = randomUUID();
    for (const dir of podDirs(uuid))
      for (const app of ['app', 'app-client', 'app-own']) mkdirSync(join(dir, app), { recursive: true });
    for (const dir of podDirs(keep)) mkdirSync(join(dir, 'app'), { recursive: true });
    removePodCgroup(uuid);
    for (const dir of podDirs(uuid)) assert.ok(!existsSync(dir), `${dir} is gone`);
    for (const dir of podDirs(keep)) assert.ok(existsSync(join(dir, 'app')), `another pod's ${dir} stays`);
    removePodCgroup(keep);
    assert.ok(!podCgroupExists(keep));
  });

  it('is a no-op for a pod that has no cgroup', () => {
    const uuid = randomUUID();
    removePodCgroup(uuid);
    assert.ok(!podCgroupExists(uuid));
  });
});
