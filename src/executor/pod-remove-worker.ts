/**
 * The worker thread behind `PodRemover` (pod-remover.ts): it runs `PodRuntime.remove`, whose
 * unmounts, `runc delete`, CNI DEL and tree walk are synchronous system calls and child processes,
 * here instead of on the cell's event loop. One message in, one answer out, matched by id.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BerthError, isBerthError } from '../core/index.js';
import { PodRuntime } from '../runtime/index.js';

export interface PodRemoveRequest {
  readonly id: number;
  readonly uuid: string;
}

export type PodRemoveAnswer =
  | { readonly id: number; readonly ok: true }
  | {
      readonly id: number;
      readonly ok: false;
      readonly code: BerthError['code'] | undefined;
      readonly message: string;
      readonly details: Readonly<Record<string, unknown>>;
    };

const runtime = new PodRuntime(String(workerData), {
  // Removal never resolves an image.
  resolve: (ref) => Promise.reject(new BerthError('internal', `The pod remover cannot resolve ${ref}`)),
});

parentPort?.on('message', (request: PodRemoveRequest) => {
  runtime.remove(request.uuid).then(
    () => parentPort?.postMessage({ id: request.id, ok: true } satisfies PodRemoveAnswer),
    (err: unknown) =>
      parentPort?.postMessage({
        id: request.id,
        ok: false,
        code: isBerthError(err) ? err.code : undefined,
        message: err instanceof Error ? err.message : String(err),
        details: isBerthError(err) ? { ...err.details } : {},
      } satisfies PodRemoveAnswer),
  );
});
