import type { FinalizationRecord } from './ingest-records.js';

/** A bounded read of the end of a log (runtime's `readLogTail`). */
export interface LogTailRead {
  readonly text: string;
  /** Bytes of log there were, of which `text` is the end. */
  readonly size: number;
  /** `text` is not all the app wrote. */
  readonly truncated: boolean;
}

export interface FinalizeInput {
  readonly container_id: string;
  readonly exit_code: number | null;
  /**
   * The pod's log: all of it, or (from a log file, which may be huge) a bounded tail with the size
   * on disk and whether output was cut. A throw becomes the finalization's failure message.
   */
  readonly readLogs: () => Promise<string | LogTailRead>;
  /** Characters of log kept; the end is kept, since the end says how it finished. */
  readonly maxLogChars?: number;
  /** Why it failed when the exit code cannot say (it never ran): recorded `Failed` with it. */
  readonly failure?: string;
  /** It was asked to stop (by whom): a non-zero exit is then `Killed`, not `Failed`. */
  readonly stopped?: string;
}

/**
 * Finalization on the cell, while the pod's files still exist: read the logs (capped) and produce
 * the record that sets Complete or Failed on the server. Reading the log can fail; that is
 * reported (the server records Failed with a `system` message) instead of being thrown, so a
 * finished container is never left without a final status. A task's outputs are not read here:
 * the executor collects them from inside the container's root (executor/task-outputs.ts), never
 * through a host path a declaration could point anywhere.
 */
export async function collectFinalization(input: FinalizeInput): Promise<FinalizationRecord> {
  const maxLog = input.maxLogChars ?? 1024 * 1024;
  const problems: string[] = [];
  let logs = '';
  let logsSize = 0;
  let truncated = false;
  try {
    const read = await input.readLogs();
    const text = typeof read === 'string' ? read : read.text;
    logsSize = typeof read === 'string' ? Buffer.byteLength(text) : read.size;
    truncated = text.length > maxLog || (typeof read !== 'string' && read.truncated);
    logs = text.length > maxLog ? text.slice(text.length - maxLog) : text;
  } catch (err) {
    problems.push(`cannot read logs: ${describe(err)}`);
  }
  return {
    type: 'finalization',
    container_id: input.container_id,
    exit_code: input.exit_code,
    logs,
    logs_size: logsSize,
    logs_truncated: truncated,
    outputs: [],
    error: problems.length > 0 ? problems.join('; ') : null,
    ...(input.failure ? { failure: input.failure } : {}),
    ...(input.stopped ? { stopped: input.stopped } : {}),
  };
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
