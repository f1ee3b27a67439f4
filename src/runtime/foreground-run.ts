import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { NetworkAttachment } from './cni-network.js';
import { podFiles } from './pod-dirs.js';
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
  // Written synchronously: a local file takes the chunk at once, and a write stream would start
  // libuv's thread pool (four threads) on the path of every run for it.
  const log = openSync(join(podPath, podFiles.log), 'a');
  const drained: Promise<void>[] = [];
  const exit = await runStage1({
    dirs: runtime.store.dirs,
    podPath,
    manifest,
    lockFd,
    output: 'pipe',
    ...(io.network ? { network: io.network } : {}),
    onOutput: (stdout, stderr) => {
      for (const [source, sink] of [
        [stdout, io.stdout],
        [stderr, io.stderr],
      ] as const) {
        source.on('data', (chunk: Buffer) => {
          sink.write(chunk);
          writeSync(log, chunk);
        });
        drained.push(new Promise((resolve) => source.once('close', () => resolve())));
      }
    },
  });
  await Promise.all(drained);
  closeSync(log);
  // Still ours (locked) and complete (log flushed): the caller records it before --rm deletes it.
  await io.onExit?.(exit);
  if (io.remove && runtime.store.move(location, 'exited-garbage')) {
    runtime.destroy({ uuid: location.uuid, phase: 'exited-garbage' });
  }
  closeSync(lockFd);
  return exit;
}
