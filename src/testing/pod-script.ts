import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { runForeground } from '../runtime/foreground-run.js';
import type { PodExit } from '../runtime/pod-manifest.js';
import type { PodRuntime } from '../runtime/pod-runtime.js';

/**
 * Runs `sh -c SCRIPT` in a new pod of image `bb` to its end in the foreground, its stdout and
 * stderr collected together, and removes the pod: how the isolation tests probe what a pod can
 * reach from inside.
 */
export async function runPodScript(
  runtime: PodRuntime,
  script: string,
  options: Parameters<PodRuntime['prepare']>[1] = {},
): Promise<{ exit: PodExit; output: string }> {
  return runPreparedToEnd(runtime, await runtime.prepare('bb', { ...options, args: ['sh', '-c', script] }));
}

/** Moves a prepared pod to run/ and runs it in the foreground to its end, as runPodScript does. */
export async function runPreparedToEnd(
  runtime: PodRuntime,
  prepared: Awaited<ReturnType<PodRuntime['prepare']>>,
): Promise<{ exit: PodExit; output: string }> {
  assert.ok(runtime.store.move(prepared.location, 'run'));
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc: string, cb: () => void) {
      chunks.push(Buffer.from(chunk));
      cb();
    },
  });
  const exit = await runForeground(
    runtime,
    { uuid: prepared.location.uuid, phase: 'run' },
    prepared.manifest,
    prepared.lockFd,
    { stdout: sink, stderr: sink, remove: true },
  );
  return { exit, output: Buffer.concat(chunks).toString() };
}

/** runPodScript for a script that must succeed: its output, or a failure that shows it. */
export async function runPodScriptToEnd(runtime: PodRuntime, script: string): Promise<string> {
  const { exit, output } = await runPodScript(runtime, script);
  assert.equal(exit.exit_code, 0, `${exit.reason ?? ''}\n${output}`);
  return output;
}
