import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { podFiles } from '../runtime/pod-dirs.js';
import type { PodManifest } from '../runtime/pod-manifest.js';
import { PodRuntime } from '../runtime/pod-runtime.js';
import { noteExitedPods, podDropbox } from './direct-pod-history.js';

/** Pods as stage 1 leaves them after they exited unseen (detached): run/<uuid>, unlocked. */
function writeExitedPods(dataDir: string, count: number): string[] {
  const uuids: string[] = [];
  const now = new Date().toISOString();
  for (let i = 0; i < count; i++) {
    const uuid = randomUUID();
    const pod = join(dataDir, 'pods', 'run', uuid);
    mkdirSync(pod, { recursive: true });
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

describe('ends of direct pods found by polling', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-poll-history-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('are dropped in batches, each end once, and a second poll finds nothing left to note', async () => {
    const uuids = writeExitedPods(dir, 1_200);
    const runtime = new PodRuntime(dir, { resolve: () => Promise.reject(new Error('no images here')) });
    const dropbox = podDropbox(dir);
    await noteExitedPods(runtime, dropbox);

    // 1,200 ends in three drops (500 + 500 + 200), not 1,200 fsync'd files.
    const drops = readdirSync(dropbox.dir).filter((name) => name.endsWith('.json'));
    assert.equal(drops.length, 3);
    const records = dropbox.pending();
    const dies = records.filter((r) => r.type === 'event' && r.event === 'die');
    assert.deepEqual(dies.map((r) => (r.type === 'event' ? r.container_id : '')).sort(), [...uuids].sort());
    for (const uuid of uuids)
      assert.ok(existsSync(join(dir, 'pods', 'run', uuid, podFiles.historyNoted)), `${uuid} is marked noted`);

    await noteExitedPods(runtime, dropbox);
    assert.equal(readdirSync(dropbox.dir).filter((name) => name.endsWith('.json')).length, 3);
  });
});
