import { existsSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomic } from '../core/index.js';
import { obituariesDir, podFiles } from '../runtime/pod-dirs.js';
import type { PodExit, PodManifest, PodObituary, PodStarted } from '../runtime/pod-manifest.js';
import type { PodRuntime } from '../runtime/pod-runtime.js';
import type { PodInfo } from '../runtime/pod-store.js';
// Narrow imports: `berth run` loads this, and must not pay for the history store's SQL modules.
import { collectFinalization } from './finalization.js';
import type { IngestRecord } from './ingest-records.js';
import { RecordDropbox } from './record-dropbox.js';

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

/** Marks a pod whose end is in the dropbox, so polling notes it once (and destroy writes no obituary). */
const notedMarker = podFiles.historyNoted;

/** What the history needs of a pod, from `PodInfo` or from a foreground run that holds its lock. */
export interface PodFacts {
  readonly uuid: string;
  /** The pod's directory (for the marker) and its log file; absent for an obituary. */
  readonly dir?: string;
  readonly logPath?: string;
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
    logPath: join(dir, podFiles.log),
    manifest: info.manifest,
    started: info.started,
    exit: info.exit,
  };
}

/** Pods of cells carry the executor's label; the cell journals those itself. */
function isDirect(manifest: PodManifest | undefined): manifest is PodManifest {
  return manifest !== undefined && !Object.keys(manifest.labels).some((k) => k.startsWith('berth.executor.'));
}

function localUser(): string {
  try {
    return userInfo().username;
  } catch {
    return String(process.getuid?.() ?? 'unknown');
  }
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
  const exit = pod.exit;
  if (!exit || !isDirect(pod.manifest)) return;
  if (pod.dir !== undefined && existsSync(join(pod.dir, notedMarker))) return;
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
  records.push(
    await collectFinalization({
      container_id: pod.uuid,
      exit_code: exit.exit_code,
      readLogs: async () =>
        pod.log ??
        (pod.logPath !== undefined && existsSync(pod.logPath) ? readFileSync(pod.logPath, 'utf8') : ''),
    }),
  );
  dropbox.drop(records);
  if (pod.dir === undefined) return;
  try {
    writeFileAtomic(join(pod.dir, notedMarker), `${exit.finished_at}\n`);
  } catch {
    // The pod moved on (gc): a second note would be deduped by the server anyway.
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
  } catch {
    return 0;
  }
  for (const name of names) {
    const path = join(dir, name);
    try {
      const o = JSON.parse(readFileSync(path, 'utf8')) as PodObituary;
      await noteExit(
        dropbox,
        { uuid: o.uuid, manifest: o.manifest, started: o.started, exit: o.exit, log: o.log },
        'service',
      );
    } catch {
      // Unreadable: written whole by rename, so not ours; dropped below like a delivered one.
    }
    unlinkSync(path);
  }
  return names.length;
}

/** Notes every exited direct pod whose end is not in the history yet (found by polling). */
export async function noteExitedPods(
  runtime: PodRuntime,
  dropbox: RecordDropbox,
  pods: readonly PodInfo[] = runtime.store.list(),
): Promise<void> {
  for (const info of pods)
    if (info.exit) await noteExit(dropbox, factsOf(runtime, info), 'service').catch(() => undefined);
  await noteObituaries(runtime.dataDir, dropbox);
}
