import { Worker } from 'node:worker_threads';
import { BerthError } from '../core/index.js';
import type { PodRemoveAnswer, PodRemoveRequest } from './pod-remove-worker.js';

/**
 * Removes pods (`PodRuntime.remove`) on a worker thread. Removing a pod is all synchronous work
 * — unmounts, `runc delete`, CNI DEL with its plugin processes, a walk deleting the pod's tree —
 * which took ~170 ms of a cell's event loop per finished task under load (docs/performance.md):
 * meanwhile the cell neither started containers, nor answered the auctioneer, nor sent its
 * heartbeat. The worker starts with the first removal and does not keep the process alive.
 * Errors come back as BerthErrors with the runtime's code (`not_found` stays `not_found`).
 */
export class PodRemover {
  readonly #dataDir: string;
  #worker: Worker | undefined;
  #nextId = 0;
  readonly #pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
  }

  remove(uuid: string): Promise<void> {
    const worker = this.#ensureWorker();
    const id = this.#nextId++;
    return new Promise<void>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      // Only pending removals keep the process alive, as a synchronous removal would.
      if (this.#pending.size === 1) worker.ref();
      worker.postMessage({ id, uuid } satisfies PodRemoveRequest);
    });
  }

  /** Ends the worker; removals still running fail. */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    if (worker) await worker.terminate();
  }

  #ensureWorker(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL('./pod-remove-worker.js', import.meta.url), {
      workerData: this.#dataDir,
    });
    worker.unref();
    worker.on('message', (answer: PodRemoveAnswer) => this.#settle(answer));
    const failAll = (err: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const { reject } of this.#pending.values()) reject(err);
      this.#pending.clear();
    };
    worker.on('error', failAll);
    worker.on('exit', (code) => failAll(new BerthError('internal', `The pod remover exited (${code})`)));
    this.#worker = worker;
    return worker;
  }

  #settle(answer: PodRemoveAnswer): void {
    const waiter = this.#pending.get(answer.id);
    if (!waiter) return;
    this.#pending.delete(answer.id);
    if (this.#pending.size === 0) this.#worker?.unref();
    if (answer.ok) waiter.resolve();
    else waiter.reject(new BerthError(answer.code ?? 'internal', answer.message, { ...answer.details }));
  }
}
