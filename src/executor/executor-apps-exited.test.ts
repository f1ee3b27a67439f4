import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { PodRuntime } from '../runtime/index.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { removePodDataDir } from '../testing/pod-data-dir-cleanup.js';
import { Executor } from './executor.js';

/**
 * A container completes when its apps exit, not when its stage-1 holder has torn the pod down:
 * real runc and real CNI plugins, with the bridge plugin's DEL held at a gate the test opens, so
 * the teardown lasts exactly as long as the test says.
 */
const realPlugins = process.env.BERTH_CNI_PATH ?? '/usr/lib/cni';
const work = mkdtempSync(join(tmpdir(), 'berth-exec-exited-'));
const dataDir = join(work, 'data');
const plugins = join(work, 'cni');
const gate = join(work, 'gate');
mkdirSync(dataDir);
mkdirSync(plugins);
const havePlugins = existsSync(join(realPlugins, 'bridge'));
if (havePlugins) {
  for (const name of readdirSync(realPlugins))
    if (name !== 'bridge') symlinkSync(join(realPlugins, name), join(plugins, name));
  // The plugin reads its config on stdin, which exec hands on. The gate also opens when the test's
  // dir is gone, so a failed run's holders end too.
  writeFileSync(
    join(plugins, 'bridge'),
    `#!/bin/sh\nif [ "$CNI_COMMAND" = DEL ]; then while [ ! -e '${gate}' ] && [ -d '${work}' ]; do sleep 0.05; done; fi\nexec '${join(realPlugins, 'bridge')}' "$@"\n`,
  );
  chmodSync(join(plugins, 'bridge'), 0o755);
}
// Read by the holders this process starts (and the pod worker), which inherit it.
process.env.BERTH_CNI_PATH = plugins;

const images = busyboxResolver();
const executor = new Executor({
  runtime: new PodRuntime(dataDir, images),
  capacity: { memory_mb: 1024, disk_mb: 1024, containers: 4 },
  hostAddress: '127.0.0.1',
  pollIntervalMs: 100,
});

after(() => {
  writeFileSync(gate, '');
  executor.stop();
  removePodDataDir(dataDir, images);
  rmSync(work, { recursive: true, force: true });
  process.env.BERTH_CNI_PATH = realPlugins;
});

describe('Executor: a container completes when its apps exit', () => {
  it('reports COMPLETED with the exit code while the holder still tears the pod down; a delete waits for it', {
    timeout: 60_000,
  }, async (t) => {
    if (!havePlugins) {
      t.skip(`no CNI plugins in ${realPlugins}`);
      return;
    }
    executor.start();
    const guid = 'exits-42';
    executor.reserve(guid, { kind: 'task', task_guid: guid, domain: 'tests' }, { memory_mb: 64, disk_mb: 0 });
    const completed = new Promise<void>((resolve) => {
      const listener = (c: { guid: string; state: string }) => {
        if (c.guid !== guid || c.state !== 'COMPLETED') return;
        executor.off('container', listener);
        resolve();
      };
      executor.on('container', listener);
    });
    // The executor's watches do not hold the event loop open (a cell has its server for that).
    const keepAlive = setInterval(() => undefined, 1000);
    try {
      await executor.run(guid, { image: 'bb', command: ['sh', '-c', 'exit 42'], env: {}, ports: [] });
      await completed;
      const container = executor.get(guid);
      assert.equal(container?.state, 'COMPLETED');
      assert.equal(container?.exit_code, 42);
      const podUuid = executor.runtime.store.list().find((p) => p.manifest?.labels)?.uuid;
      assert.ok(podUuid, 'the container has a pod');
      // The holder is held at the bridge plugin's DEL: it still has the pod's lock.
      assert.equal(executor.runtime.status(podUuid).state, 'running', 'the teardown is still under way');

      let deleted = false;
      const deleting = executor.deleteContainer(guid).then(() => {
        deleted = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(deleted, false, 'the delete waits for the teardown');
      writeFileSync(gate, '');
      await deleting;
      assert.equal(executor.get(guid), undefined);
      assert.equal(
        executor.runtime.store.list().some((p) => p.uuid === podUuid),
        false,
        'the pod is gone once its holder ended',
      );
    } finally {
      clearInterval(keepAlive);
    }
  });
});
