import { closeSync } from 'node:fs';
import { join } from 'node:path';
import type { NetworkAttachment } from './cni-network.js';
import { podApps } from './pod-apps.js';
import { defaultLogSizeMax, RotatingLogWriter } from './pod-log.js';
import type { PodExit, PodManifest } from './pod-manifest.js';
import type { PodRuntime } from './pod-runtime.js';
import type { PodLocation } from './pod-store.js';
import { runStage1 } from './stage1.js';

/**
 * Runs a pod in the foreground: this process is the stage-1 holder. The app's stdout and stderr
 * stream to ours and into the pod's log (so `berth logs` works for foreground pods too).
 */
export async function runForeground(
  runtime: PodRuntime,
  location: PodLocation,
  manifest: PodManifest,
  lockFd: number,
  io: {
    readonly stdout: NodeJS.WritableStream;
    readonly stderr: NodeJS.WritableStream;
    readonly remove: boolean;
    /** Runs once the pod has exited and its log is complete, before `remove` deletes it. */
    readonly onExit?: (exit: PodExit) => void | Promise<void>;
    /** A `--net private` attach started while the pod was prepared (see `PrepareOptions`). */
    readonly network?: Promise<NetworkAttachment>;
  },
): Promise<PodExit> {
  const podPath = runtime.store.path(location);
  // Written synchronously (see RotatingLogWriter), rotated at the pod's cap; one per app, the
  // first app's in the pod dir (see the stage-1 holder).
  const logs = podApps(manifest).map(
    (app) => new RotatingLogWriter(join(podPath, app.bundle), manifest.logSizeMax ?? defaultLogSizeMax),
  );
  const drained: Promise<void>[] = [];
  const exit = await runStage1({
    dirs: runtime.store.dirs,
    podPath,
    manifest,
    lockFd,
    output: 'pipe',
    ...(io.network ? { network: io.network } : {}),
    onOutput: (stdout, stderr, appIndex) => {
      const log = logs[appIndex] as RotatingLogWriter;
      for (const [stream, source, sink] of [
        ['stdout', stdout, io.stdout],
        ['stderr', stderr, io.stderr],
      ] as const) {
        // A terminal or pipe that cannot keep up pauses the app (its pipe fills) instead of
        // queueing its output here without bound; a reader that went away pauses nothing: the
        // app runs on, its output still in the log.
        let sinkGone = false;
        const sinkEnded = () => {
          sinkGone = true;
          source.resume();
        };
        sink.once('error', sinkEnded);
        sink.once('close', sinkEnded);
        source.on('data', (chunk: Buffer) => {
          log.write(stream, chunk);
          if (sinkGone || sink.write(chunk)) return;
          source.pause();
          sink.once('drain', () => source.resume());
        });
        source.once('close', () => {
          sink.off('error', sinkEnded);
          sink.off('close', sinkEnded);
        });
        drained.push(new Promise((resolve) => source.once('close', () => resolve())));
      }
    },
  });
  await Promise.all(drained);
  for (const log of logs) log.close();
  // Still ours (locked) and complete (log flushed): the caller records it before --rm deletes it.
  await io.onExit?.(exit);
  if (io.remove && runtime.store.move(location, 'exited-garbage')) {
    runtime.destroy({ uuid: location.uuid, phase: 'exited-garbage' });
  }
  closeSync(lockFd);
  return exit;
}
