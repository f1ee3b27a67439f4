/**
 * Entry point of the detached stage-1 holder: `node stage1-holder-main.js DATA_DIR UUID rm|keep`,
 * spawned by `berth run --detach` / `run-prepared` with the pod's exclusive lock on fd 3 and a
 * readiness pipe on fd 4. It is the only berth process left while a detached pod runs.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { podFiles } from './pod-dirs.js';
import { PodStore } from './pod-store.js';
import { runStage1 } from './stage1.js';

const lockFd = 3;
const readyFd = 4;

async function holderMain(): Promise<number> {
  const [dataDir, uuid, removeFlag] = process.argv.slice(2);
  if (!dataDir || !uuid) return 2;
  const store = new PodStore(dataDir);
  const location = { uuid, phase: 'run' as const };
  const manifest = store.readManifest(location);
  let ready = true;
  const signalReady = (started: boolean) => {
    if (!ready) return;
    ready = false;
    try {
      writeSync(readyFd, started ? 'started\n' : 'failed\n');
      closeSync(readyFd);
    } catch {
      // The parent went away; nobody is waiting for the answer.
    }
  };
  if (!manifest) {
    signalReady(false);
    return 1;
  }
  const path = store.path(location);
  const logFd = openSync(join(path, podFiles.log), 'a');
  await runStage1({
    dirs: store.dirs,
    podPath: path,
    manifest,
    lockFd,
    output: logFd,
    onStarted: signalReady,
  });
  signalReady(false);
  if (removeFlag === 'rm' && store.move(location, 'exited-garbage')) {
    const { PodRuntime } = await import('./pod-runtime.js');
    new PodRuntime(dataDir, { resolve: () => Promise.reject(new Error('unused')) }).destroy({
      uuid,
      phase: 'exited-garbage',
    });
  }
  return 0;
}

holderMain().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`berth stage-1 holder: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
