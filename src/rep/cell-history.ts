import { join } from 'node:path';
import { DirWatch, Wakeup } from '../core/index.js';
import type { CellExecutor, ExecutorContainer } from '../executor/index.js';
import {
  CellEventJournal,
  collectFinalization,
  directPodDirs,
  type IngestRecord,
  noteObituaries,
  podDropbox,
  type RecordDropbox,
} from '../history/index.js';

export interface CellHistoryOptions {
  /**
   * The safety net of the direct pods' delivery, which a watch on their dirs wakes at once
   * (default 60 s, as the journal's; while a watch cannot be had, it polls every second instead).
   */
  readonly directPodsSafetyNetMs?: number;
}

/** How often the direct pods' dirs are polled while the kernel refuses to watch them. */
const directPodsPollMs = 1_000;

/**
 * What a cell tells the history layer (seed 001): each container's launch, its start, its death
 * with the exit code, and its finalization (logs, then Complete or Failed). Observations go to an
 * on-disk journal first and are delivered in order while the server is reachable, so nothing
 * observed during an outage is lost and every item keeps its original external_timestamp.
 */
export class CellHistory {
  readonly journal: CellEventJournal;
  /** What `berth run` & co. dropped for pods run directly on this data dir (src/cli/pod-history.ts). */
  readonly directPods: RecordDropbox;
  readonly #controller = new AbortController();
  #delivery: Promise<void> | undefined;
  #directDelivery: Promise<void> | undefined;
  readonly #launched = new Set<string>();

  readonly #dataDir: string;
  readonly #cellId: string;
  readonly #executor: CellExecutor;
  readonly #log: (message: string) => void;
  readonly #directSafetyNetMs: number;
  #directWatch: DirWatch | undefined;

  constructor(
    dataDir: string,
    cellId: string,
    executor: CellExecutor,
    log: (message: string) => void,
    options: CellHistoryOptions = {},
  ) {
    this.#directSafetyNetMs = options.directPodsSafetyNetMs ?? 60_000;
    this.#dataDir = dataDir;
    this.#cellId = cellId;
    this.#executor = executor;
    this.#log = log;
    this.journal = new CellEventJournal({ dir: join(dataDir, 'history-journal') });
    this.directPods = podDropbox(dataDir);
  }

  start(post: (batch: readonly IngestRecord[]) => Promise<void>): void {
    this.#executor.on('container', (container) => {
      try {
        this.#observe(container);
      } catch (err) {
        this.#log(`history: ${String(err)}`);
      }
    });
    this.#delivery = this.journal.runDelivery({
      post,
      signal: this.#controller.signal,
      onError: (err, retryInMs) =>
        this.#log(`history delivery failed, retrying in ${retryInMs} ms: ${String(err)}`),
    });
    // `berth run` & co. drop into these dirs from their own processes: the watch wakes delivery.
    const woken = new Wakeup();
    const watch = new DirWatch(directPodDirs(this.#dataDir), woken);
    this.#directWatch = watch;
    this.#directDelivery = this.directPods.runDelivery({
      post,
      before: () => {
        watch.ensure();
        // Pods deleted the moment they ended (`berth run -d --rm`) left obituaries: note them first.
        return noteObituaries(this.#dataDir, this.directPods);
      },
      signal: this.#controller.signal,
      wakeup: woken,
      intervalMs: () => (watch.watching ? this.#directSafetyNetMs : directPodsPollMs),
      onError: (err) => this.#log(`history delivery of direct pods failed: ${String(err)}`),
    });
  }

  async stop(): Promise<void> {
    this.#controller.abort();
    this.#directWatch?.close();
    // catch-all: each loop reports its own failures through onError; stop only waits for the end.
    await this.#delivery?.catch(() => {});
    await this.#directDelivery?.catch(() => {}); // catch-all: as above
  }

  #observe(container: ExecutorContainer): void {
    const now = new Date().toISOString();
    if (!this.#launched.has(container.guid)) {
      this.#launched.add(container.guid);
      const spec = this.#executor.spec(container.guid);
      this.journal.recordLaunch(
        {
          id: container.guid,
          image: spec?.image ?? '',
          command: spec?.command ?? [],
          env_names: Object.keys(spec?.env ?? {}),
          cell_id: this.#cellId,
          owner_kind: container.tags.kind,
          owner_id:
            container.tags.kind === 'lrp'
              ? `${container.tags.process_guid}/${container.tags.index}`
              : container.tags.task_guid,
          system: null,
        },
        now,
        // The server names the system that owns the domain (the cell does not know systems).
        { domain: container.tags.domain },
      );
    }
    // A restarted cell finds containers on disk: what it reports then was found by looking, so
    // entity `service` (seed 001), with the pod's own end time when it has one.
    const found = container.adopted === true;
    if (container.state === 'RUNNING') {
      this.journal.record({
        container_id: container.guid,
        event: 'start',
        external_timestamp: now,
        entity_type: found ? 'service' : 'event',
        ...(found ? { message: 'found running when the cell started' } : {}),
      });
      return;
    }
    if (container.state !== 'COMPLETED') return;
    const exitCode = container.exit_code ?? null;
    const stopped = container.result?.kind === 'shutdown' && container.tags.kind === 'lrp';
    const ended = found ? (container.finished_at ?? now) : now;
    const foundNote = found ? ' (found ended when the cell started)' : '';
    if (container.result?.oom) {
      // Docker's order: `oom`, then `die` (→ "Killed (Out of Memory)" stays in the history).
      this.journal.record({
        container_id: container.guid,
        event: 'oom',
        external_timestamp: ended,
        exit_code: exitCode,
        message: `${container.result.reason}${foundNote}`,
        entity_type: found ? 'service' : 'event',
      });
    }
    this.journal.record({
      container_id: container.guid,
      event: stopped ? 'kill' : 'die',
      external_timestamp: ended,
      exit_code: exitCode,
      message: container.result?.reason ? `${container.result.reason}${foundNote}` : null,
      entity_type: found ? 'service' : 'event',
    });
    let logs: ReturnType<CellExecutor['readLog']> | Error;
    try {
      // Now, while the pod is still there; bounded, so a flooding app cannot take the cell down.
      logs = this.#executor.readLog(container.guid);
    } catch (err) {
      logs = err instanceof Error ? err : new Error(String(err));
    }
    const result = container.result;
    void collectFinalization({
      container_id: container.guid,
      exit_code: exitCode,
      // The truth the exit code cannot tell: a launch that never ran (or a crash whose app exited 0)
      // failed, with its reason; a stop asked for ends `Killed`, not `Failed`.
      ...(result?.failed && result.kind !== 'shutdown' && (exitCode === null || exitCode === 0)
        ? { failure: result.reason }
        : {}),
      ...(result?.kind === 'shutdown' ? { stopped: result.reason } : {}),
      readLogs: async () => {
        if (logs instanceof Error) throw logs;
        return logs;
      },
    }).then(
      (record) => this.journal.recordFinalization(record),
      (err: unknown) => this.#log(`history finalization: ${String(err)}`),
    );
  }
}
