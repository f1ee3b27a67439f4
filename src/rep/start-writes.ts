import {
  type ActualLRP,
  actualLrpKey,
  type BatchedStartRequest,
  type BbsStore,
  CasConflictError,
  type StartResult,
} from '../bbs/index.js';
import { BerthError } from '../core/index.js';

/** A batch request carries at most this many starts; more wait for the next one. */
const maxStartsPerRequest = 500;

interface PendingStart {
  readonly req: BatchedStartRequest;
  resolve(actual: ActualLRP): void;
  reject(err: unknown): void;
}

/**
 * A cell's start writes, batched the way the auction batches work: a start goes at the next turn
 * of the event loop (`setImmediate`) with every start made in the same turn, one request for all
 * of them, so an idle cell waits for nothing but that turn; starts made while a request is in
 * flight wait for it and then go together. A burst of starts on a cell so costs one request per
 * round trip to the BBS, not one per instance. The turn matters for containers that start
 * together (a perform's, whose starts are seen in one timers phase): sent at once, the first went
 * alone and the rest in a second request, twice the requests a cell made for them
 * (docs/performance.md, round 22). Each caller gets its own answer, and a lost CAS is the same
 * CasConflictError a single start throws, so the reconcile table's appliers cannot tell the
 * difference.
 */
export class StartWrites {
  readonly #bbs: BbsStore;
  #waiting: PendingStart[] = [];
  #sending = false;

  constructor(bbs: BbsStore) {
    this.#bbs = bbs;
  }

  start(req: BatchedStartRequest): Promise<ActualLRP> {
    return new Promise<ActualLRP>((resolve, reject) => {
      this.#waiting.push({ req, resolve, reject });
      if (this.#sending) return;
      this.#sending = true;
      setImmediate(() => void this.#sendAll());
    });
  }

  /** Sends what waits, and what comes meanwhile, until nothing does; `#sending` is already set. */
  async #sendAll(): Promise<void> {
    try {
      while (this.#waiting.length > 0) await this.#send(this.#waiting.splice(0, maxStartsPerRequest));
    } finally {
      this.#sending = false;
    }
  }

  async #send(batch: readonly PendingStart[]): Promise<void> {
    const [only] = batch;
    if (batch.length === 1 && only) {
      await this.#bbs.startActualLRP(only.req).then(only.resolve, only.reject);
      return;
    }
    let results: readonly StartResult[];
    try {
      ({ results } = await this.#bbs.startActualLRPs({ starts: batch.map((p) => p.req) }));
    } catch (err) {
      for (const pending of batch) pending.reject(err);
      return;
    }
    batch.forEach((pending, i) => {
      const result = results[i];
      if (result === undefined)
        pending.reject(
          new BerthError('internal', `the BBS answered ${results.length} of ${batch.length} starts`),
        );
      else if ('actual_lrp' in result) pending.resolve(result.actual_lrp);
      else pending.reject(startError(pending.req, result.error));
    });
  }
}

/** One start's refusal as the error a single start would have thrown. */
function startError(
  req: BatchedStartRequest,
  error: Extract<StartResult, { error: unknown }>['error'],
): BerthError {
  if (error.code === 'cas_conflict')
    return new CasConflictError('ActualLRP', actualLrpKey(req), req.expected, error.current ?? null);
  return new BerthError(
    error.code,
    error.message,
    error.current !== undefined ? { current: error.current } : {},
  );
}
