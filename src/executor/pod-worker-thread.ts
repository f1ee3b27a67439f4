/**
 * The worker thread behind `PodWorker` (pod-worker.ts): it runs the runtime's synchronous pod work
 * — a pod's preparation (its directory, confined lock fd, bundle) and its removal (unmounts,
 * `runc delete`, CNI DEL, the tree walk) — here instead of on the cell's event loop. One message
 * in, one answer out, matched by id.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BerthError, isBerthError } from '../core/index.js';
import {
  type PodLocation,
  type PodManifest,
  PodRuntime,
  type PrepareOptions,
  prepareHostNetwork,
  type ResolvedImage,
} from '../runtime/index.js';

export type PodWorkRequest =
  | { readonly id: number; readonly op: 'remove'; readonly uuid: string }
  /** The host's pod network rules and this data dir's slice, before the first pod needs them. */
  | { readonly id: number; readonly op: 'prepare-network' }
  | {
      readonly id: number;
      readonly op: 'prepare';
      readonly imageRef: string;
      /** Resolved by the caller, which alone holds the image store. */
      readonly image: ResolvedImage;
      /** The images of the pod's other apps (its sidecars), by reference, resolved likewise. */
      readonly sideImages: Readonly<Record<string, ResolvedImage>>;
      readonly options: PrepareOptions;
    };

/** A prepared pod, its lock fd held (fds are the process's, so the caller's thread owns it). */
export interface PreparedPodAnswer {
  readonly location: PodLocation;
  readonly manifest: PodManifest;
  readonly lockFd: number;
}

export type PodWorkAnswer =
  | { readonly id: number; readonly ok: true; readonly prepared?: PreparedPodAnswer }
  | {
      readonly id: number;
      readonly ok: false;
      readonly code: BerthError['code'] | undefined;
      readonly message: string;
      readonly details: Readonly<Record<string, unknown>>;
    };

const dataDir = String(workerData);
const remover = new PodRuntime(dataDir, {
  // Removal never resolves an image.
  resolve: (ref) => Promise.reject(new BerthError('internal', `The pod worker cannot resolve ${ref}`)),
});

async function perform(request: PodWorkRequest): Promise<PreparedPodAnswer | undefined> {
  if (request.op === 'remove') {
    await remover.remove(request.uuid);
    return undefined;
  }
  if (request.op === 'prepare-network') {
    prepareHostNetwork(dataDir);
    return undefined;
  }
  const runtime = new PodRuntime(dataDir, {
    resolve: async (ref) => {
      if (ref === request.imageRef) return request.image;
      const side = request.sideImages[ref];
      if (side === undefined) throw new BerthError('internal', `The pod worker was not given image ${ref}`);
      return side;
    },
  });
  const { location, manifest, lockFd } = await runtime.prepare(request.imageRef, request.options);
  return { location, manifest, lockFd };
}

parentPort?.on('message', (request: PodWorkRequest) => {
  perform(request).then(
    (prepared) =>
      parentPort?.postMessage({
        id: request.id,
        ok: true,
        ...(prepared ? { prepared } : {}),
      } satisfies PodWorkAnswer),
    (err: unknown) =>
      parentPort?.postMessage({
        id: request.id,
        ok: false,
        code: isBerthError(err) ? err.code : undefined,
        message: err instanceof Error ? err.message : String(err),
        details: isBerthError(err) ? { ...err.details } : {},
      } satisfies PodWorkAnswer),
  );
});
