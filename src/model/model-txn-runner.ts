import { TxnAbortedError } from './model-errors.js';
import type { ModelTxn, ModelView } from './model-types.js';

/**
 * Applies model transactions all or nothing: every assert is checked against the current state
 * first; if one fails, nothing is written and `TxnAbortedError` (retryable) is thrown. The storage
 * layer implements this with one SQL transaction; `MemoryModelTxnRunner` is the reference.
 */
export interface ModelTxnRunner {
  /** A view of the current model; valid until the next `run`. */
  read(): Promise<ModelView>;
  run(txn: ModelTxn): Promise<void>;
}

export interface RunTxnOptions {
  /** Attempts before giving up on a contended entity (Juju gives up after 3 with ErrExcessiveContention). */
  readonly attempts?: number;
}

/**
 * Juju's buildTxn loop: build from a fresh view, apply, and on an aborted assert build again. `build`
 * returns null when there is nothing (left) to do, which ends the loop without writing.
 */
export async function runTxn(
  runner: ModelTxnRunner,
  build: (view: ModelView, attempt: number) => ModelTxn | null,
  options: RunTxnOptions = {},
): Promise<ModelTxn | null> {
  const attempts = options.attempts ?? 5;
  let last: unknown;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const txn = build(await runner.read(), attempt);
    if (txn === null) return null;
    try {
      await runner.run(txn);
      return txn;
    } catch (err) {
      if (!(err instanceof TxnAbortedError)) throw err;
      last = err;
    }
  }
  throw last;
}
