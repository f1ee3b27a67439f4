/**
 * Entry point of the detached stage-1 holder: `node stage1-holder-main.js DATA_DIR UUID rm|keep`,
 * spawned by `berth run --detach` / `run-prepared` with the pod's exclusive lock on fd 3 and a
 * readiness pipe on fd 4. It is the only berth process left while a detached pod runs.
 *
 * `node stage1-holder-main.js --serve`: a holder a cell reuses from pod to pod (holder-pool.ts),
 * given each pod on its control socket (fd 3) with the pod's fds, one pod at a time.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { holderPipeWriter } from './holder-pipe.js';
import type { HolderJob } from './holder-pool.js';
import { nativeAddon } from './native-addon.js';
import { podApps } from './pod-apps.js';
import { defaultLogSizeMax, RotatingLogWriter } from './pod-log.js';
import type { LogStream } from './pod-log-format.js';
import { PodStore } from './pod-store.js';
import { runStage1 } from './stage1.js';

/** What one pod's holding needs: the pod, and the fds it was handed (its lock, its answer pipe). */
interface HoldArgs extends HolderJob {
  readonly lockFd: number;
  readonly readyFd: number;
}

/** A pipe whose read end this process copies into `log` as `stream`; the app gets the write end. */
function logPipe(log: RotatingLogWriter, stream: LogStream): { writeEnd: number; drained: Promise<void> } {
  const [readEnd, writeEnd] = nativeAddon().pipe();
  const output = new Socket({ fd: readEnd, readable: true, writable: false });
  output.on('data', (chunk: Buffer) => log.write(stream, chunk));
  const drained = new Promise<void>((resolve) => output.once('close', () => resolve()));
  return { writeEnd, drained };
}

async function holdPod({ dataDir, uuid, remove, lockFd, readyFd }: HoldArgs): Promise<number> {
  const store = new PodStore(dataDir);
  const location = { uuid, phase: 'run' as const };
  const manifest = store.readManifest(location);
  // Its starter hears `started` or `failed`, then `exited` (holder-pipe.ts).
  const starter = holderPipeWriter(readyFd);
  try {
    if (!manifest) {
      starter.answer(false);
      return 1;
    }
    return await holdManifest(dataDir, store, location, manifest, lockFd, starter, remove);
  } finally {
    starter.close();
  }
}

async function holdManifest(
  dataDir: string,
  store: PodStore,
  location: { readonly uuid: string; readonly phase: 'run' },
  manifest: NonNullable<ReturnType<PodStore['readManifest']>>,
  lockFd: number,
  starter: ReturnType<typeof holderPipeWriter>,
  remove: boolean,
): Promise<number> {
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
  if (remove && store.move(location, 'exited-garbage')) {
    const { PodRuntime } = await import('./pod-runtime.js');
    new PodRuntime(dataDir, { resolve: () => Promise.reject(new Error('unused')) }).destroy({
      uuid: location.uuid,
      phase: 'exited-garbage',
    });
  }
  return 0;
}

const controlFd = 3;

/**
 * Serves pods one at a time (holder-pool.ts) until the control socket ends. Each pod comes as a
 * line of JSON with four fds: its lock, its answer pipe, its log (this process's stdout and
 * stderr while it holds the pod) and the done pipe. Once the pod is torn down, its lock is closed
 * (the kernel drops it when the apps and the watcher are gone too), then the done pipe, after
 * `reuse` unless this holder is going (a pod that failed here leaves the process to end).
 */
async function serve(): Promise<number> {
  const addon = nativeAddon();
  const devNull = openSync('/dev/null', 'r+');
  for (;;) {
    // Blocking: nothing else is left to run between pods.
    const message = addon.recvFds(controlFd);
    if (message === null) return 0;
    const [lockFd, readyFd, logFd, doneFd] = message.fds;
    const job = parseJob(message.data.toString());
    if (
      lockFd === undefined ||
      readyFd === undefined ||
      logFd === undefined ||
      doneFd === undefined ||
      !job
    ) {
      for (const fd of message.fds) closeSync(fd);
      return 2;
    }
    addon.dupTo(logFd, 1);
    addon.dupTo(logFd, 2);
    closeSync(logFd);
    let reusable = true;
    try {
      await holdPod({ ...job, lockFd, readyFd });
    } catch (err) {
      process.stderr.write(`berth stage-1 holder: ${err instanceof Error ? err.message : String(err)}\n`);
      reusable = false;
    }
    closeSync(lockFd);
    addon.dupTo(devNull, 1);
    addon.dupTo(devNull, 2);
    if (reusable) writeSync(doneFd, 'reuse\n');
    closeSync(doneFd);
    if (!reusable) return 1;
  }
}

function parseJob(text: string): HolderJob | undefined {
  // One message a pod, and the pool sends the next only after this one's done pipe closed.
  if (!text.endsWith('\n') || text.indexOf('\n') !== text.length - 1) return undefined;
  try {
    const job = JSON.parse(text) as { dataDir?: unknown; uuid?: unknown; remove?: unknown };
    if (typeof job.dataDir !== 'string' || typeof job.uuid !== 'string' || typeof job.remove !== 'boolean')
      return undefined;
    return { dataDir: job.dataDir, uuid: job.uuid, remove: job.remove };
  } catch {
    // catch-all: not the pool's message; the holder ends, and the pod's fds with it.
    return undefined;
  }
}

function holderMain(): Promise<number> {
  const [first, uuid, removeFlag] = process.argv.slice(2);
  if (first === '--serve') return serve();
  if (!first || !uuid) return Promise.resolve(2);
  return holdPod({ dataDir: first, uuid, remove: removeFlag === 'rm', lockFd: 3, readyFd: 4 });
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
