import { existsSync, readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { writeFileAtomic } from '../core/index.js';
import {
  attachNetworkInBackground,
  detachNetwork,
  detachNetworkInBackground,
  type NetworkAttachment,
  type ReservedIn,
} from './cni-network.js';
import { endStdin, type NativeChild, spawnNative } from './native-process.js';
import { podApps, podContainerIds } from './pod-apps.js';
import { podOutOfMemory, preparePodCgroup, removePodCgroup } from './pod-cgroup.js';
import { podFiles, type RuntimeDirs } from './pod-dirs.js';
import type { AppExit, PodExit, PodManifest, PodNetwork, PodStarted } from './pod-manifest.js';
import {
  joinSharedNamespaces,
  mountTmpfsVolumes,
  podExitOfApps,
  type SharedNamespaces,
  startSharedNamespaces,
  stopSharedNamespaces,
  unmountTmpfsVolumes,
} from './stage1-apps.js';
import { type AppOutput, awaitApps, startApp } from './stage1-run-app.js';

/**
 * Stage 1: runs the pod's app under runc while the pod's exclusive lock is held. The lock fd is
 * handed to runc as fd 3 and kept open in the container with `--preserve-fds 1` (the seed's
 * RKT_LOCK_FD contract), so the kernel drops the lock exactly when the last holder exits:
 * the container's processes, runc, this process, and the watcher below. That fd was opened
 * through a detached read-only mount of the pod dir (confined-dir.ts): in the container it
 * reaches the pod's own directory and nothing above it.
 *
 * The watcher is a tiny shell that also holds the lock and reads a pipe from this process. If
 * this process dies (even by SIGKILL) the pipe closes, and the watcher kills the app, records why
 * in exit.json and exits, and only then does the lock drop. So the exit record is always
 * written before the lock is released, and a dead holder never leaves a running orphan.
 */

const watcherScript = `
IFS= read -r line
[ "$line" = done ] && exit 0
for id in $2; do runc --root "$1" kill "$id" KILL >/dev/null 2>&1; done
for id in $2; do
  i=0
  while [ $i -lt 200 ] && runc --root "$1" state "$id" 2>/dev/null | grep -q '"status": "running"'; do sleep 0.05; i=$((i+1)); done
  runc --root "$1" delete --force "$id" >/dev/null 2>&1
done
if [ ! -e "$3/exit.json" ]; then
  printf '{"exit_code":137,"finished_at":"%s","reason":"the stage-1 holder was killed, so berth killed the app"}\\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$3/.exit.json.watcher" && mv "$3/.exit.json.watcher" "$3/exit.json"
fi
exit 0
`;

export interface Stage1Options {
  readonly dirs: RuntimeDirs;
  readonly podPath: string;
  readonly manifest: PodManifest;
  readonly lockFd: number;
  /**
   * Where each app's stdout and stderr go: detached, a function of the app's index gives its two
   * log pipes; 'pipe' (foreground) gives them to `onOutput`.
   */
  readonly output: AppOutput;
  /** Called once the app runs (runc wrote its pid) or failed to start. */
  readonly onStarted?: (started: boolean) => void;
  /**
   * Called once the apps that started have all exited and exit.json holds their record, before
   * the teardown (network, cgroup) that the lock still covers.
   */
  readonly onExited?: () => void;
  /** Foreground only ('pipe'): receives runc's stdout and stderr to tee them. */
  readonly onOutput?: (stdout: Socket, stderr: Socket, appIndex: number) => void;
  /**
   * `--net private`: an attach the caller started while it prepared the pod (the CNI plugins run
   * as child processes meanwhile). Without it, stage 1 attaches the pod itself.
   */
  readonly network?: Promise<NetworkAttachment>;
}

/** Runs the pod to completion and returns its exit record (already written to exit.json). */
export async function runStage1(options: Stage1Options): Promise<PodExit> {
  const { dirs, podPath, manifest, lockFd } = options;
  const exitPath = join(podPath, podFiles.exit);
  let startedAt: string | undefined;
  const finish = (exit: PodExit): PodExit => {
    const record: PodExit = startedAt !== undefined ? { ...exit, started_at: startedAt } : exit;
    writeFileAtomic(exitPath, `${JSON.stringify(record)}\n`);
    return record;
  };

  const attaching =
    manifest.net === 'private'
      ? (options.network ?? attachNetworkInBackground(manifest.uuid, dirs.root, manifest.ports))
      : undefined;
  // Where the address was reserved: known once attached, searched for if attaching failed midway.
  let reservedIn: ReservedIn = 'unrecorded';
  let watcher: NativeChild;
  let shared: SharedNamespaces | undefined;
  try {
    preparePodCgroup(manifest.uuid, manifest.memoryBytes);
    if (attaching) {
      const attached = await attaching;
      reservedIn = { slice: attached.slice };
      const network: PodNetwork = {
        address: attached.address,
        ports: attached.ports,
        masquerade: attached.masquerade,
        ...(attached.slice !== undefined ? { slice: attached.slice } : {}),
        ...(attached.hostInterface ? { host_interface: attached.hostInterface } : {}),
      };
      writeFileAtomic(join(podPath, podFiles.network), `${JSON.stringify(network)}\n`);
    }
    const multiApp = (manifest.sideApps?.length ?? 0) > 0;
    if (multiApp) {
      shared = await startSharedNamespaces(manifest);
      joinSharedNamespaces(podPath, manifest, shared);
    }
    mountTmpfsVolumes(podPath, manifest);
    // Both children are started by posix_spawn (native-process.ts), not node's fork-then-exec.
    watcher = spawnNative(
      '/bin/sh',
      [
        '-c',
        watcherScript,
        'berth-watcher',
        dirs.runc,
        podContainerIds(manifest.uuid, manifest).join(' '),
        podPath,
      ],
      {
        stdio: ['pipe', 'null', 'null', lockFd],
        newSession: true,
        // Reaped when it goes, and awaited at the end (below), so it keeps this process alive.
        watch: 'ref',
      },
    );
  } catch (err) {
    if (attaching && reservedIn === 'unrecorded') {
      // Something else failed while the plugins ran: let them finish, so DEL finds what ADD made.
      const attached = await attaching.catch(() => undefined);
      if (attached) reservedIn = { slice: attached.slice };
    }
    if (manifest.net === 'private') detachNetwork(manifest.uuid, manifest.ports, 'subnet', reservedIn);
    if (shared) stopSharedNamespaces(shared);
    unmountTmpfsVolumes(podPath, manifest);
    removePodCgroup(manifest.uuid);
    options.onStarted?.(false);
    return finish({
      exit_code: null,
      finished_at: new Date().toISOString(),
      reason: err instanceof Error ? err.message : String(err),
    });
  }
  const apps = podApps(manifest);
  const runs = apps.map((app) => startApp(dirs, podPath, app, lockFd, options));
  const spawnedAt = new Date().toISOString();

  // runc writes its pid file once the container exists; until then "started" is unknown. The pod
  // has started once every app has.
  let appStarted = false;
  const noteStarted = (): boolean => {
    if (appStarted) return true;
    if (!runs.every((r) => existsSync(r.pidPath))) return false;
    appStarted = true;
    startedAt = spawnedAt;
    const started: PodStarted = {
      started_at: spawnedAt,
      pid: Number(readFileSync(runs[0]?.pidPath ?? '', 'utf8').trim()) || null,
    };
    writeFileAtomic(join(podPath, podFiles.started), `${JSON.stringify(started)}\n`);
    options.onStarted?.(true);
    return true;
  };
  const allExited = Promise.all(runs.map((r) => r.exited));
  const pidWatch = (async () => {
    for (let done = false; !done && !noteStarted(); ) {
      done = await Promise.race([
        allExited.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 5)),
      ]);
    }
  })();

  const forward = (signal: NodeJS.Signals) => () => {
    for (const run of runs) {
      try {
        if (run.runc) process.kill(run.runc.pid, signal);
      } catch {
        // runc has just exited: its end is on its way.
      }
    }
  };
  const handlers = (['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const).map((s) => [s, forward(s)] as const);
  for (const [signal, handler] of handlers) process.on(signal, handler);

  const ends = await awaitApps(dirs, podPath, manifest, runs);
  await pidWatch;
  for (const [signal, handler] of handlers) process.off(signal, handler);
  // An app that exits within the first poll still started: its pid file is there.
  noteStarted();

  const single = ends.length === 1 ? ends[0] : undefined;
  let exit: PodExit = single
    ? {
        exit_code: single.exit_code,
        finished_at: single.finished_at,
        ...(single.reason !== undefined ? { reason: single.reason } : {}),
      }
    : {
        ...podExitOfApps(apps, ends, manifest.exitOnFirst ?? false),
        finished_at: new Date().toISOString(),
        apps: apps.map((a) => ends.find((e) => e.name === a.name) as AppExit),
      };
  if (podOutOfMemory(manifest.uuid, exit.exit_code))
    exit = {
      ...exit,
      oom_killed: true,
      reason: 'out of memory: the kernel killed the app at its memory limit',
    };
  if (!appStarted) options.onStarted?.(false);
  finish(exit);
  if (appStarted) options.onExited?.();
  // The exit record is down: the network goes (its plugins run meanwhile), then the cgroup, and
  // the watcher may go. The root overlay went with the container's mount namespace.
  const detaching =
    manifest.net === 'private'
      ? detachNetworkInBackground(manifest.uuid, manifest.ports, reservedIn)
      : undefined;
  removePodCgroup(manifest.uuid);
  if (shared) stopSharedNamespaces(shared);
  unmountTmpfsVolumes(podPath, manifest);
  if (watcher.stdin !== undefined) endStdin(watcher.stdin, 'done\n');
  // The watcher holds the lock too: this process ends only after it, so that whoever hears this
  // process end (the executor's holderGone, a foreground run's caller) finds the pod unlocked.
  await Promise.all([detaching, watcher.exited]);
  return exit;
}
