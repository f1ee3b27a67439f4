/**
 * Entry point of the detached stage-1 holder: `node stage1-holder-main.js DATA_DIR UUID rm|keep`,
 * spawned by `berth run --detach` / `run-prepared` with the pod's exclusive lock on fd 3 and a
 * readiness pipe on fd 4. It is the only berth process left while a detached pod runs.
 */
import { closeSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { holderPipeWriter } from './holder-pipe.js';
import { nativeAddon } from './native-addon.js';
import { podApps } from './pod-apps.js';
import { defaultLogSizeMax, RotatingLogWriter } from './pod-log.js';
import type { LogStream } from './pod-log-format.js';
import { PodStore } from './pod-store.js';
import { runStage1 } from './stage1.js';

const lockFd = 3;
const readyFd = 4;

/** A pipe whose read end this process copies into `log` as `stream`; the app gets the write end. */
function logPipe(log: RotatingLogWriter, stream: LogStream): { writeEnd: number; drained: Promise<void> } {
  const [readEnd, writeEnd] = nativeAddon().pipe();
  const output = new Socket({ fd: readEnd, readable: true, writable: false });
  output.on('data', (chunk: Buffer) => log.write(stream, chunk));
  const drained = new Promise<void>((resolve) => output.once('close', () => resolve()));
  return { writeEnd, drained };
}

async function holderMain(): Promise<number> {
  const [dataDir, uuid, removeFlag] = process.argv.slice(2);
  if (!dataDir || !uuid) return 2;
  const store = new PodStore(dataDir);
  const location = { uuid, phase: 'run' as const };
  const manifest = store.readManifest(location);
  // Its starter hears `started` or `failed`, then `exited` (holder-pipe.ts).
  const starter = holderPipeWriter(readyFd);
  if (!manifest) {
    starter.answer(false);
    return 1;
  }
  const path = store.path(location);
  // (This process's own stderr is the log file as it was when it started, for a failure before
  // this point; after a rotation its rare last words land in log.1, or nowhere once dropped.)
  // Each of the app's stdout and stderr is a pipe that this process reads into the rotating log,
  // stamping each line with the time it read it and its stream, as conmon does: runc's output
  // straight into the log file would grow it without bound and keep neither. A full pipe blocks
  // the app's writes until the log has taken them.
  // Each app of a pod has a log of its own: the first app's is the pod's, in its dir (as a pod
  // of one app), the others' in their bundle dirs (pod-apps.ts).
  const outputs = podApps(manifest).map((app) => {
    const log = new RotatingLogWriter(join(path, app.bundle), manifest.logSizeMax ?? defaultLogSizeMax);
    const [stdout, stderr] = [logPipe(log, 'stdout'), logPipe(log, 'stderr')];
    return { log, stdout: stdout.writeEnd, stderr: stderr.writeEnd, pipes: [stdout, stderr] };
  });
  try {
    await runStage1({
      dirs: store.dirs,
      podPath: path,
      manifest,
      lockFd,
      output: (index) => {
        const app = outputs[index];
        if (!app) throw new Error(`no log pipes for app ${index}`);
        return app;
      },
      onStarted: starter.answer,
      onExited: starter.exited,
    });
  } finally {
    // runc and the apps are gone: with our write ends closed the pipes end once read out.
    for (const o of outputs) for (const p of o.pipes) closeSync(p.writeEnd);
  }
  for (const o of outputs) {
    await Promise.all(o.pipes.map((p) => p.drained));
    o.log.close();
  }
  starter.answer(false);
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
