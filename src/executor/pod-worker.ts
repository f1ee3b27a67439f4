import { Worker } from 'node:worker_threads';
import { BerthError } from '../core/index.js';
import type { PrepareOptions, ResolvedImage } from '../runtime/index.js';
import type { PodWorkAnswer, PodWorkRequest, PreparedPodAnswer } from './pod-worker-thread.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * Prepares and removes pods (`PodRuntime.prepare`, `PodRuntime.remove`) on a worker thread. Both
 * are synchronous work — the pod tree, its confined lock fd (open_tree(2), which waits on the
 * kernel's mount lock while runc mounts other pods), the bundle; unmounts, `runc delete`, CNI DEL
 * with its plugin processes, the tree walk — which took ~90 ms and ~170 ms of a cell's event loop
 * per task under load (docs/performance.md): meanwhile the cell neither started containers, nor
 * answered the auctioneer, nor sent its heartbeat. The worker starts with `warm` (the executor's
 * start) or the first request, and keeps the process alive only while requests are pending. Errors come back as BerthErrors with
 * the runtime's code (`not_found` stays `not_found`).
 */
export class PodWorker {
  readonly #dataDir: string;
  #worker: Worker | undefined;
  #nextId = 0;
  #warmedUp: Promise<void> = Promise.resolve();
  readonly #pending = new Map<
    number,
    {
      readonly worker: Worker;
      resolve: (prepared: PreparedPodAnswer | undefined) => void;
      reject: (err: Error) => void;
    }
  >();

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
  }

  /**
   * Starts the thread now and has it set up the host's pod network (`prepareHostNetwork`), so that
   * neither a new thread (a V8 isolate and the runtime's module graph: ~150 ms of a cell's first
   * container start on the 2-core machine) nor the firewall's first setup (~70 ms) falls on the
   * first container (docs/performance.md).
   */
  warm(): void {
    // The warm-up only saves the first container's start some time. A host that cannot set up pod
    // networking gets the same error from that start, which reports it.
    this.#warmedUp = this.#request({ op: 'prepare-network' }).then(
      () => undefined,
      // catch-all: as said above
      () => undefined,
    );
  }

  /** Resolves (never rejects) once `warm`'s work is over; at once if it was never asked. */
  get warmedUp(): Promise<void> {
    return this.#warmedUp;
  }

  async remove(uuid: string): Promise<void> {
    await this.#request({ op: 'remove', uuid });
  }

  /** Embryo → Prepare with the lock held, as `PodRuntime.prepare`, for an image already resolved. */
  async prepare(
    imageRef: string,
    image: ResolvedImage,
    sideImages: Readonly<Record<string, ResolvedImage>>,
    options: PrepareOptions,
  ): Promise<PreparedPodAnswer> {
    const prepared = await this.#request({ op: 'prepare', imageRef, image, sideImages, options });
    if (!prepared) throw new BerthError('internal', 'The pod worker prepared no pod');
    return prepared;
  }

  /**
   * Ends the worker once the requests already sent have answered: a removal cut off midway would
   * leave half a pod, and its caller an error for a pod that was going away anyway.
   */
  async close(): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    while (this.#hasPending(worker) && this.#worker === worker)
      await new Promise<void>((resolve) => worker.once('message', () => setImmediate(resolve)));
    if (this.#worker === worker) this.#worker = undefined;
    await worker.terminate();
  }

  #request(request: DistributiveOmit<PodWorkRequest, 'id'>): Promise<PreparedPodAnswer | undefined> {
    const worker = this.#ensureWorker();
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { worker, resolve, reject });
      worker.ref();
      worker.postMessage({ ...request, id } as PodWorkRequest);
    });
  }

  #ensureWorker(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL('./pod-worker-thread.js', import.meta.url), {
      workerData: this.#dataDir,
    });
    worker.unref();
    worker.on('message', (answer: PodWorkAnswer) => this.#settle(answer));
    // Only this worker's requests: after `close`, a request (a container deleted while its cell
    // stops) starts a new worker, and the old one's exit, which comes later, must not fail it.
    const failAll = (err: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const [id, waiter] of this.#pending) {
        if (waiter.worker !== worker) continue;
        this.#pending.delete(id);
        waiter.reject(err);
      }
    };
    worker.on('error', failAll);
    worker.on('exit', (code) => failAll(new BerthError('internal', `The pod worker exited (${code})`)));
    this.#worker = worker;
    return worker;
  }

  #hasPending(worker: Worker): boolean {
    for (const waiter of this.#pending.values()) if (waiter.worker === worker) return true;
    return false;
  }

  #settle(answer: PodWorkAnswer): void {
    const waiter = this.#pending.get(answer.id);
    if (!waiter) return;
    this.#pending.delete(answer.id);
    if (!this.#hasPending(waiter.worker)) waiter.worker.unref();
    if (answer.ok) waiter.resolve(answer.prepared);
    else waiter.reject(new BerthError(answer.code ?? 'internal', answer.message, { ...answer.details }));
  }
}
