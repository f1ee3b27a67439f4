import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { podFiles } from '../runtime/pod-dirs.js';
import type { PodManifest } from '../runtime/pod-manifest.js';
import { podPhases } from '../runtime/pod-state.js';

/**
 * Writes `count` direct pods as stage 1 leaves them after they exited unseen (a detached pod):
 * `run/<uuid>` unlocked, with pod.json, started.json, exit.json and a log, so tests and benchmarks
 * can have thousands of exited pods without running runc. Returns their UUIDs.
 */
export function writeExitedPods(dataDir: string, count: number): string[] {
  for (const phase of podPhases) mkdirSync(join(dataDir, 'pods', phase), { recursive: true });
  mkdirSync(join(dataDir, 'runc'), { recursive: true });
  const uuids: string[] = [];
  const now = new Date().toISOString();
  for (let i = 0; i < count; i++) {
    const uuid = randomUUID();
    const pod = join(dataDir, 'pods', 'run', uuid);
    mkdirSync(pod);
    const manifest: PodManifest = {
      uuid,
      name: '',
      hostname: uuid.slice(0, 12),
      image: { ref: 'bb:1', id: 'sha256:0', rootfs: '/nonexistent' },
      app: { args: ['true'], env: [], cwd: '/', user: { uid: 0, gid: 0, additionalGids: [], home: '/root' } },
      net: 'none',
      ports: [],
      memoryBytes: null,
      pidsLimit: null,
      labels: {},
      created: now,
    };
    writeFileSync(join(pod, podFiles.manifest), JSON.stringify(manifest));
    writeFileSync(join(pod, podFiles.started), JSON.stringify({ started_at: now, pid: 1 }));
    writeFileSync(join(pod, podFiles.exit), JSON.stringify({ exit_code: i % 3, finished_at: now }));
    writeFileSync(join(pod, podFiles.log), `pod ${i}\n`);
    uuids.push(uuid);
  }
  return uuids;
}
