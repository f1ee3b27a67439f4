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
import { endStdin, type NativeChild, type ProcessEnd, spawnNative } from './native-process.js';
import { podOutOfMemory, preparePodCgroup, removePodCgroup } from './pod-cgroup.js';
import { podFiles, type RuntimeDirs } from './pod-dirs.js';
import type { PodExit, PodManifest, PodNetwork, PodStarted } from './pod-manifest.js';

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
runc --root "$1" kill "$2" KILL >/dev/null 2>&1
i=0
while [ $i -lt 200 ] && runc --root "$1" state "$2" 2>/dev/null | grep -q '"status": "running"'; do sleep 0.05; i=$((i+1)); done
runc --root "$1" delete --force "$2" >/dev/null 2>&1
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
  /** Where the app's stdout and stderr go: an fd (detached: the log file) or 'pipe' (foreground). */
  readonly output: number | 'pipe';
  /** Called once the app runs (runc wrote its pid) or failed to start. */
  readonly onStarted?: (started: boolean) => void;
  /** Foreground only ('pipe'): receives runc's stdout and stderr to tee them. */
  readonly onOutput?: (stdout: Socket, stderr: Socket) => void;
  /**
   * `--net private`: an attach the caller started while it prepared the pod (the CNI plugins run
   * as child processes meanwhile). Without it, stage 1 attaches the pod itself.
   */
  readonly network?: Promise<NetworkAttachment>;
}

function readRuncError(podPath: string): string {
  try {
    const lines = readFileSync(join(podPath, 'runc.log'), 'utf8').trim().split('\n');
    for (const line of lines.reverse()) {
      const entry = JSON.parse(line) as { level?: string; msg?: string };
      if (entry.level === 'error' && entry.msg) return entry.msg;
    }
  } catch {
    // No runc log, or a torn line: fall through to the generic reason.
  }
  return 'runc could not start the container';
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
    // Both children are started by posix_spawn (native-process.ts), not node's fork-then-exec.
    watcher = spawnNative(
      '/bin/sh',
      ['-c', watcherScript, 'berth-watcher', dirs.runc, manifest.uuid, podPath],
      {
        stdio: ['pipe', 'null', 'null', lockFd],
        newSession: true,
        // Reaped when it goes, so a long-lived process running pods keeps no zombies.
        watch: 'unref',
      },
    );
  } catch (err) {
    if (attaching && reservedIn === 'unrecorded') {
      // Something else failed while the plugins ran: let them finish, so DEL finds what ADD made.
      const attached = await attaching.catch(() => undefined);
      if (attached) reservedIn = { slice: attached.slice };
    }
    if (manifest.net === 'private') detachNetwork(manifest.uuid, manifest.ports, 'subnet', reservedIn);
    removePodCgroup(manifest.uuid);
    options.onStarted?.(false);
    return finish({
      exit_code: null,
      finished_at: new Date().toISOString(),
      reason: err instanceof Error ? err.message : String(err),
    });
  }
  const output = options.output;
  let runc: NativeChild | undefined;
  let exited: Promise<ProcessEnd & { error?: Error }>;
  try {
    runc = spawnNative(
      'runc',
      [
        '--root',
        dirs.runc,
        '--log',
        join(podPath, 'runc.log'),
        '--log-format',
        'json',
        'run',
        '--bundle',
        podPath,
        '--pid-file',
        join(podPath, podFiles.pid),
        '--preserve-fds',
        '1',
        manifest.uuid,
      ],
      // Own session and process group: terminal signals reach berth, which forwards them once.
      { stdio: ['null', output, output, lockFd], newSession: true },
    );
    exited = runc.exited;
    const [stdout, stderr] = [runc.pipes.get(1), runc.pipes.get(2)];
    if (stdout && stderr) options.onOutput?.(stdout, stderr);
  } catch (err) {
    exited = Promise.resolve({
      code: null,
      signal: null,
      error: err instanceof Error ? err : new Error(String(err)),
    });
  }
  const spawnedAt = new Date().toISOString();

  // runc writes its pid file once the container exists; until then "started" is unknown.
  let appStarted = false;
  const pidPath = join(podPath, podFiles.pid);
  const noteStarted = (): boolean => {
    if (appStarted) return true;
    if (!existsSync(pidPath)) return false;
    appStarted = true;
    startedAt = spawnedAt;
    const started: PodStarted = {
      started_at: spawnedAt,
      pid: Number(readFileSync(pidPath, 'utf8').trim()) || null,
    };
    writeFileAtomic(join(podPath, podFiles.started), `${JSON.stringify(started)}\n`);
    options.onStarted?.(true);
    return true;
  };
  const pidWatch = (async () => {
    for (let done = false; !done && !noteStarted(); ) {
      done = await Promise.race([
        exited.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 5)),
      ]);
    }
  })();

  const forward = (signal: NodeJS.Signals) => () => {
    try {
      if (runc) process.kill(runc.pid, signal);
    } catch {
      // runc has just exited: its end is on its way.
    }
  };
  const handlers = (['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const).map((s) => [s, forward(s)] as const);
  for (const [signal, handler] of handlers) process.on(signal, handler);

  const result = await exited;
  await pidWatch;
  for (const [signal, handler] of handlers) process.off(signal, handler);
  // An app that exits within the first poll still started: its pid file is there.
  noteStarted();

  let exit: PodExit;
  if (result.error) {
    exit = {
      exit_code: null,
      finished_at: new Date().toISOString(),
      reason: `cannot run runc: ${result.error.message}`,
    };
  } else if (!appStarted) {
    exit = { exit_code: null, finished_at: new Date().toISOString(), reason: readRuncError(podPath) };
  } else {
    const code = result.code ?? (result.signal !== null ? 128 + result.signal : null);
    exit = { exit_code: code, finished_at: new Date().toISOString() };
  }
  if (podOutOfMemory(manifest.uuid, exit.exit_code))
    exit = {
      ...exit,
      oom_killed: true,
      reason: 'out of memory: the kernel killed the app at its memory limit',
    };
  if (!appStarted) options.onStarted?.(false);
  finish(exit);
  // The exit record is down: the network goes (its plugins run meanwhile), then the cgroup, and
  // the watcher may go. The root overlay went with the container's mount namespace.
  const detaching =
    manifest.net === 'private'
      ? detachNetworkInBackground(manifest.uuid, manifest.ports, reservedIn)
      : undefined;
  removePodCgroup(manifest.uuid);
  if (watcher.stdin !== undefined) endStdin(watcher.stdin, 'done\n');
  await detaching;
  return exit;
}
