import { existsSync, linkSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '../core/index.js';
import type {
  PodExit,
  PodInfo,
  PodManifest,
  PodObituary,
  PodRuntime,
  PodStarted,
  PodStore,
} from '../runtime/index.js';
import { obituariesDir, podFiles } from '../runtime/pod-dirs.js';
import { readLogTail } from '../runtime/pod-log-reader.js';
// Narrow imports: `berth run` loads this, and must not pay for the history store's SQL modules.
import { collectFinalization } from './finalization.js';
import type { IngestRecord } from './ingest-records.js';
import { RecordDropbox } from './record-dropbox.js';
import { localUser, readStopRequest, writeStopRequest } from './stop-request.js';

/**
 * The history of pods run directly (`berth run`, `prepare`, `run-prepared`): issue 6 wants a
 * record of every container berth ran, and these have no cell watching them. The CLI drops what
 * it sees into `<data dir>/pod-history` (see RecordDropbox): the launch (entity `user`, the OS
 * user), the start, and the end with logs; an end it did not see itself (a detached pod) is
 * noted by the next `status`, `list` or `gc` with entity `service` — found by polling. A cell
 * on the same data dir (`berth cell`, `berth up`) delivers them to the server.
 */
export function podDropbox(dataDir: string): RecordDropbox {
  return new RecordDropbox(join(dataDir, 'pod-history'));
}

/** Where other processes leave what a cell on `dataDir` delivers: the dropbox, and the obituaries. */
export function directPodDirs(dataDir: string): readonly string[] {
  return [podDropbox(dataDir).dir, join(dataDir, obituariesDir)];
}

/** Marks a pod whose end is in the dropbox, so polling notes it once (and destroy writes no obituary). */
const notedMarker = podFiles.historyNoted;

/** What the history needs of a pod, from `PodInfo` or from a foreground run that holds its lock. */
export interface PodFacts {
  readonly uuid: string;
  /** The pod's directory (for the marker, and its log files); absent for an obituary. */
  readonly dir?: string;
  /** The log itself, when the pod is gone (an obituary). */
  readonly log?: string;
  readonly manifest: PodManifest | undefined;
  readonly started: PodStarted | undefined;
  readonly exit: PodExit | undefined;
}

export function factsOf(runtime: PodRuntime, info: PodInfo): PodFacts {
  const dir = runtime.store.path(info);
  return {
    uuid: info.uuid,
    dir,
    manifest: info.manifest,
    started: info.started,
    exit: info.exit,
  };
}

/**
 * The history's id of a pod: a cell's pod is its executor container's guid (the executor's label
 * saves it), a pod run directly its uuid.
 */
export function historyIdOf(uuid: string, manifest: PodManifest | undefined): string {
  const saved = manifest?.labels['berth.executor.container'];
  if (saved === undefined) return uuid;
  try {
    const guid = (JSON.parse(saved) as { guid?: unknown }).guid;
    return typeof guid === 'string' && guid !== '' ? guid : uuid;
  } catch {
    // catch-all: a label that is not the executor's JSON: the pod is then known by its uuid.
    return uuid;
  }
}

/** Pods of cells carry the executor's label; the cell journals those itself. */
function isDirect(manifest: PodManifest | undefined): manifest is PodManifest {
  return manifest !== undefined && !Object.keys(manifest.labels).some((k) => k.startsWith('berth.executor.'));
}

export function noteLaunch(dropbox: RecordDropbox, uuid: string, manifest: PodManifest): void {
  if (!isDirect(manifest)) return;
  dropbox.drop([
    {
      type: 'launch',
      container: {
        id: uuid,
        image: manifest.image.ref,
        command: manifest.app.args,
        env_names: manifest.app.env.map((e) => e.split('=')[0] ?? ''),
        cell_id: '',
        owner_kind: 'direct',
        owner_id: uuid,
        system: null,
      },
      external_timestamp: manifest.created,
      entity_type: 'user',
      entity_id: localUser(),
    },
  ]);
}

export function noteStart(dropbox: RecordDropbox, pod: PodFacts): void {
  if (!isDirect(pod.manifest) || !pod.started) return;
  dropbox.drop([
    {
      type: 'event',
      container_id: pod.uuid,
      event: 'start',
      external_timestamp: pod.started.started_at,
      entity_type: 'event',
    },
  ]);
}

/**
 * The end of a pod: its start if not noted yet, `oom` when the kernel killed it, `die` with its
 * status, then its logs. `seenBy` is `event` when the caller watched it end, `service` when a
 * later command found it ended (polling).
 */
export async function noteExit(
  dropbox: RecordDropbox,
  pod: PodFacts,
  seenBy: 'event' | 'service',
): Promise<void> {
  const records = await exitRecords(pod, seenBy);
  if (records === undefined) return;
  dropbox.drop(records);
  markNoted(pod);
}

/** The records of a pod's end, or undefined when there is nothing (more) to note. */
async function exitRecords(pod: PodFacts, seenBy: 'event' | 'service'): Promise<IngestRecord[] | undefined> {
  const exit = pod.exit;
  if (!exit || !isDirect(pod.manifest)) return undefined;
  if (pod.dir !== undefined && existsSync(join(pod.dir, notedMarker))) return undefined;
  const records: IngestRecord[] = [];
  if (pod.started)
    records.push({
      type: 'event',
      container_id: pod.uuid,
      event: 'start',
      external_timestamp: pod.started.started_at,
      entity_type: seenBy,
    });
  if (exit.oom_killed)
    records.push({
      type: 'event',
      container_id: pod.uuid,
      event: 'oom',
      external_timestamp: exit.finished_at,
      exit_code: exit.exit_code,
      message: exit.reason ?? null,
      entity_type: seenBy,
    });
  records.push({
    type: 'event',
    container_id: pod.uuid,
    event: 'die',
    external_timestamp: exit.finished_at,
    exit_code: exit.exit_code,
    message: exit.reason ?? null,
    entity_type: seenBy,
  });
  // `berth stop` left who asked in the pod: a stop, not the app failing (seed 001 via issue 19).
  const stop = pod.dir !== undefined ? readStopRequest(pod.dir) : undefined;
  records.push(
    await collectFinalization({
      container_id: pod.uuid,
      exit_code: exit.exit_code,
      ...(stop ? { stopped: stop.user ? `stopped by ${stop.user}` : 'stopped' } : {}),
      // The end of the log, never all of it: a flooding pod's log would not fit in memory.
      readLogs: async () => pod.log ?? (pod.dir !== undefined ? readLogTail(pod.dir) : ''),
    }),
  );
  return records;
}

/** Once its end is durably dropped: later polls skip the pod (and destroy writes no obituary). */
function markNoted(pod: PodFacts): void {
  if (pod.dir === undefined) return;
  try {
    linkSync(join(pod.dir, podFiles.exit), join(pod.dir, notedMarker));
  } catch {
    // catch-all: already noted (EEXIST), or the pod moved on (gc): a second note is deduped by the server.
  }
}

/**
 * Turns the obituaries `PodRuntime.destroy` left (pods deleted before their end was noted, as
 * `berth run -d --rm` pods are) into history drops, then deletes them.
 */
export async function noteObituaries(dataDir: string, dropbox: RecordDropbox): Promise<number> {
  const dir = join(dataDir, obituariesDir);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json'));
  } catch (err) {
    // No pod was ever destroyed unnoted: the dir is made by the first obituary.
    if (errnoCode(err) === 'ENOENT') return 0;
    throw err;
  }
  for (const name of names) {
    const path = join(dir, name);
    let o: PodObituary | undefined;
    try {
      o = JSON.parse(readFileSync(path, 'utf8')) as PodObituary;
    } catch {
      // catch-all: unreadable; written whole by rename, so not ours: dropped below like a noted one.
    }
    // A drop that fails throws before the unlink: the obituary stays for the next pass.
    if (o)
      await noteExit(
        dropbox,
        { uuid: o.uuid, manifest: o.manifest, started: o.started, exit: o.exit, log: o.log },
        'service',
      );
    unlinkSync(path);
  }
  return names.length;
}

/**
 * Ends found by polling go into one drop per batch rather than one per pod: a `gc` that finds
 * 10,000 unnoted ends writes and fsyncs a few files, not 10,000. A batch is dropped (durably)
 * before its pods are marked noted; a crash between the two notes them again, and the history
 * dedupes the repeat. A drop is one ingest request when delivered, so a batch stays well inside
 * its limits (5,000 records, a 16 MB body: 4 Mi characters are at most 12 MB of UTF-8).
 */
const pollBatchPods = 500;
const pollBatchChars = 4 * 1024 * 1024;

/**
 * The pods that may have ended and whose end is not noted yet. The marker is looked at before any
 * of a pod's files is read: `gc` runs this over every pod on disk, almost all of them noted. A
 * pod that changes phase mid-scan may be missed; the next poll finds it.
 */
function unnotedPods(store: PodStore): PodInfo[] {
  const pods: PodInfo[] = [];
  for (const phase of ['run', 'exited-garbage'] as const) {
    for (const uuid of store.listPhase(phase)) {
      const location = { uuid, phase };
      if (existsSync(join(store.path(location), notedMarker))) continue;
      const info = store.inspect(location);
      if (info?.exit) pods.push(info);
    }
  }
  return pods;
}

/** Notes every exited direct pod whose end is not in the history yet (found by polling). */
export async function noteExitedPods(
  runtime: PodRuntime,
  dropbox: RecordDropbox,
  pods: readonly PodInfo[] = unnotedPods(runtime.store),
): Promise<void> {
  let batch: IngestRecord[] = [];
  let batchPods: PodFacts[] = [];
  let batchChars = 0;
  const flush = (): void => {
    if (batchPods.length === 0) return;
    dropbox.drop(batch);
    for (const pod of batchPods) markNoted(pod);
    batch = [];
    batchPods = [];
    batchChars = 0;
  };
  for (const info of pods) {
    if (!info.exit) continue;
    const pod = factsOf(runtime, info);
    // catch-all: its files went while we read them (collected): its obituary, if any, notes it.
    const records = await exitRecords(pod, 'service').catch(() => undefined);
    if (records === undefined) continue;
    batch.push(...records);
    batchPods.push(pod);
    batchChars += JSON.stringify(records).length;
    if (batchPods.length >= pollBatchPods || batchChars >= pollBatchChars) flush();
  }
  flush();
  await noteObituaries(runtime.dataDir, dropbox);
}

/**
 * A user's `berth stop` of a pod on this machine: the stop request left in the pod (so whoever sees
 * it end knows it was asked for, not a crash) and a `user` item with the OS user, dropped for the
 * cell on this data dir to deliver. `containerId` is the history's id of the pod: its uuid when run
 * directly, the executor's container guid for a cell's pod.
 */
export function noteUserStop(
  dropbox: RecordDropbox,
  podDir: string,
  containerId: string,
  at: Date = new Date(),
): void {
  const user = localUser();
  writeStopRequest(podDir, { user, at: at.toISOString() });
  dropbox.drop([
    {
      type: 'item',
      container_id: containerId,
      status: 'stop',
      entity_type: 'user',
      entity_id: user,
      message: `berth stop by ${user}`,
      external_timestamp: at.toISOString(),
    },
  ]);
}

/**
 * A user's `berth enter` (runc exec) into a pod on this machine: docker's `exec_start`, as a `user`
 * item with the OS user and the command, dropped for the cell on this data dir to deliver.
 */
export function noteUserExec(
  dropbox: RecordDropbox,
  containerId: string,
  argv: readonly string[],
  at: Date = new Date(),
): void {
  const user = localUser();
  dropbox.drop([
    {
      type: 'item',
      container_id: containerId,
      status: 'exec_start',
      entity_type: 'user',
      entity_id: user,
      message: `berth enter by ${user}: ${argv.join(' ')}`.slice(0, 1000),
      external_timestamp: at.toISOString(),
    },
  ]);
}
