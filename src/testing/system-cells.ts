import type { ActualLRP, BbsStore, Task } from '../bbs/index.js';
import { isSuperseded, orAbsent, sleep } from '../core/index.js';

/**
 * Plays the cells (the rep's side of the BBS): every UNCLAIMED instance of the system is claimed
 * and started on cell-<n>; an instance no longer desired is stopped and removed.
 */
export async function playCells(store: BbsStore, domain: string): Promise<void> {
  // Instances first, then what is desired: an instance listed here existed before the desired
  // read, so a DesiredLRP desired meanwhile (a rollback's re-desire) cannot lose its fresh
  // instance to a stale "not desired".
  const actuals = await store.listActualLRPs({ domain });
  const desired = new Map(
    (await store.listDesiredLRPs({ domain })).map((d) => [d.process_guid, d.instances]),
  );
  for (const a of actuals) {
    if (a.evacuating) continue;
    try {
      await playInstance(store, a, desired.get(a.process_guid) ?? 0);
    } catch (err) {
      // One instance the server moved meanwhile (a CAS lost, a record gone) must not stop the
      // round: the others are played, and this one again next round.
      if (!isSuperseded(err)) throw err;
    }
  }
}

async function playInstance(store: BbsStore, a: ActualLRP, desiredInstances: number): Promise<void> {
  if (a.index >= desiredInstances) {
    // Looked up again right before the removal: it may have been desired since the round began.
    const now = await orAbsent(store.getDesiredLRP({ process_guid: a.process_guid }));
    if (now !== undefined && a.index < now.instances) return;
    await store.removeActualLRP({
      process_guid: a.process_guid,
      index: a.index,
      expected: a.modification_tag,
    });
    return;
  }
  if (a.state !== 'UNCLAIMED') return;
  const cell_id = `cell-${a.index % 3}`;
  const key = { instance_guid: `ig-${a.process_guid}-${a.index}`, cell_id };
  const claimed = await store.claimActualLRP({
    process_guid: a.process_guid,
    index: a.index,
    expected: a.modification_tag,
    instance_key: key,
  });
  await store.startActualLRP({
    process_guid: a.process_guid,
    index: a.index,
    expected: claimed.modification_tag,
    instance_key: key,
    net_info: { address: '10.0.0.1', ports: [] },
  });
}

/** Why a played task fails, or undefined when it succeeds. */
export type TaskFailure = (task: Task) => string | undefined;

/**
 * Plays the cells for tasks: every PENDING task of the domain is started on cell-0 and completed,
 * succeeded unless `fail` gives a reason (then failed with it).
 */
export async function playTasks(
  store: BbsStore,
  domain: string,
  fail: TaskFailure = () => undefined,
): Promise<void> {
  for (const t of await store.listTasks({ domain })) {
    if (t.state !== 'PENDING') continue;
    const started = await store.startTask({
      task_guid: t.task_guid,
      expected: t.modification_tag,
      cell_id: 'cell-0',
    });
    const reason = fail(t);
    await store.completeTask({
      task_guid: t.task_guid,
      expected: started.modification_tag,
      cell_id: 'cell-0',
      failed: reason !== undefined,
      failure_reason: reason ?? '',
      result: '',
    });
  }
}

/**
 * Plays a system's instances and tasks, one round every `ms` (a round never overlaps the next, so
 * a slow backend is not buried under rounds), until the returned stop is called.
 */
export function playSystem(store: BbsStore, system: string, fail?: TaskFailure, ms = 30): () => void {
  const domain = `system-${system}`;
  const stopping = new AbortController();
  void (async () => {
    while (!stopping.signal.aborted) {
      await playCells(store, domain)
        .then(() => playTasks(store, domain, fail))
        // catch-all: a round racing the server's own writes, or a store closing under a test that
        // ends, is played again next round (or not at all once stopped).
        .catch(() => {});
      await sleep(ms, stopping.signal);
    }
  })();
  return () => stopping.abort();
}
