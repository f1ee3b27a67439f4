import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { PodRuntime } from '../runtime/index.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { removePodDataDir } from '../testing/pod-data-dir-cleanup.js';
import { Executor } from './executor.js';

/**
 * A task's result_file read by the executor after real runc tasks: what the container wrote, what
 * its image holds, through its own symlinks, and never a host file through a symlink it planted.
 */
const images = busyboxResolver();
const dataDir = mkdtempSync(join(tmpdir(), 'berth-exec-result-'));
/** A host directory the containers must not reach, with a secret in it. */
const hostDir = mkdtempSync(join(tmpdir(), 'berth-host-secret-'));
writeFileSync(join(hostDir, 'secret'), 'host secret\n');

const executor = new Executor({
  runtime: new PodRuntime(dataDir, images),
  capacity: { memory_mb: 4096, disk_mb: 4096, containers: 20 },
  hostAddress: '127.0.0.1',
  pollIntervalMs: 100,
  portRange: { from: 63100, to: 63199 },
});
executor.start();

after(() => {
  executor.stop();
  removePodDataDir(dataDir, images);
  rmSync(hostDir, { recursive: true, force: true });
});

let tasks = 0;
/** Runs `script` as a task to its end and returns the task result it left in `resultFile`. */
async function taskResult(script: string, resultFile: string): Promise<string | undefined> {
  const guid = `result-${tasks++}`;
  executor.reserve(guid, { kind: 'task', task_guid: guid, domain: 'tests' }, { memory_mb: 64, disk_mb: 0 });
  const done = new Promise<void>((resolve) => {
    const listener = (c: { guid: string; state: string }) => {
      if (c.guid !== guid || c.state !== 'COMPLETED') return;
      executor.off('container', listener);
      resolve();
    };
    executor.on('container', listener);
  });
  await executor.run(guid, {
    image: 'bb',
    command: ['sh', '-c', script],
    env: {},
    ports: [],
    result_file: resultFile,
  });
  // The executor's exit watches and poll timer do not hold the event loop open (a cell has its
  // server for that): this wait does.
  const keepAlive = setInterval(() => undefined, 1000);
  await done.finally(() => clearInterval(keepAlive));
  const container = executor.get(guid);
  assert.equal(container?.exit_code, 0, JSON.stringify(container?.result));
  await executor.deleteContainer(guid);
  return container?.task_result;
}

describe('executor: result_file', () => {
  it('a symlink the container plants never reaches a host file (`ln -s /etc /b`, /b/shadow)', async () => {
    const [shadow, secret, climb, fileLink] = await Promise.all([
      taskResult('ln -s /etc /b', '/b/shadow'),
      taskResult(`ln -s ${hostDir} /b`, '/b/secret'),
      taskResult('mkdir -p /x && ln -s ../../../../../../../.. /x/up', `/x/up${hostDir}/secret`),
      taskResult(`ln -s ${hostDir}/secret /r`, '/r'),
    ]);
    assert.equal(shadow, '', 'the host /etc/shadow is not read: the image has no /etc/shadow');
    assert.equal(secret, '');
    assert.equal(climb, '');
    assert.equal(fileLink, '');
  });

  it('reads what the container wrote, what the image holds, and through symlinks that stay inside', async () => {
    const [written, image, absolute, relative, overImage] = await Promise.all([
      taskResult('echo written > /tmp/out', '/tmp/out'),
      taskResult('true', '/etc/group'),
      taskResult('mkdir -p /data && echo abs > /data/r && ln -s /data /b', '/b/r'),
      taskResult('mkdir -p /w && echo rel > /w/r && ln -s ../w/r /tmp/link', '/tmp/link'),
      taskResult('echo mine > /etc/group', '/etc/group'),
    ]);
    assert.equal(written, 'written\n');
    assert.equal(image, 'root:x:0:\nnogroup:x:65534:\n');
    assert.equal(absolute, 'abs\n');
    assert.equal(relative, 'rel\n');
    assert.equal(overImage, 'mine\n');
  });
});
