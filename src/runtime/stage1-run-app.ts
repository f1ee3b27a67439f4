/**
 * One app of a pod under `runc run`, and the wait for all of a pod's apps: each app's end is
 * recorded as it comes, and in a pod of several apps, with `--exit-on-first` (or when an app
 * could not start) the first end stops the others: SIGTERM, then SIGKILL after a grace period.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { type NativeChild, type ProcessEnd, spawnNative } from './native-process.js';
import type { PodAppRun } from './pod-apps.js';
import { podFiles, type RuntimeDirs } from './pod-dirs.js';
import type { AppExit, PodManifest } from './pod-manifest.js';
import { writeAppExits } from './stage1-apps.js';

/** How long the other apps of a pod have between SIGTERM and SIGKILL when one app's end stops them. */
export const stopOthersGraceMs = 5000;

/** Where an app's stdout and stderr go: two fds (the holder's log pipes) or 'pipe' (foreground). */
export type AppOutput = 'pipe' | ((appIndex: number) => { readonly stdout: number; readonly stderr: number });

export function readRuncError(bundlePath: string): string {
  try {
    const lines = readFileSync(join(bundlePath, 'runc.log'), 'utf8').trim().split('\n');
    for (const line of lines.reverse()) {
      const entry = JSON.parse(line) as { level?: string; msg?: string };
      if (entry.level === 'error' && entry.msg) return entry.msg;
    }
  } catch {
    // No runc log, or a torn line: fall through to the generic reason.
  }
  return 'runc could not start the container';
}

export interface AppRunning {
  readonly app: PodAppRun;
  readonly runc: NativeChild | undefined;
  readonly exited: Promise<ProcessEnd & { error?: Error }>;
  readonly pidPath: string;
  readonly spawnedAt: string;
}

export function startApp(
  dirs: RuntimeDirs,
  podPath: string,
  app: PodAppRun,
  lockFd: number,
  options: {
    readonly output: AppOutput;
    readonly onOutput?: (stdout: Socket, stderr: Socket, appIndex: number) => void;
  },
): AppRunning {
  const bundle = join(podPath, app.bundle);
  const pidPath = join(bundle, podFiles.pid);
  const output =
    typeof options.output === 'function'
      ? options.output(app.index)
      : ({ stdout: 'pipe', stderr: 'pipe' } as const);
  let runc: NativeChild | undefined;
  let exited: Promise<ProcessEnd & { error?: Error }>;
  try {
    runc = spawnNative(
      'runc',
      [
        '--root',
        dirs.runc,
        '--log',
        join(bundle, 'runc.log'),
        '--log-format',
        'json',
        'run',
        '--bundle',
        bundle,
        '--pid-file',
        pidPath,
        '--preserve-fds',
        '1',
        app.containerId,
      ],
      // Own session and process group: terminal signals reach berth, which forwards them once.
      // Every app's container holds the pod's lock: it drops when the last one ends.
      { stdio: ['null', output.stdout, output.stderr, lockFd], newSession: true },
    );
    exited = runc.exited;
    const [stdout, stderr] = [runc.pipes.get(1), runc.pipes.get(2)];
    if (stdout && stderr) options.onOutput?.(stdout, stderr, app.index);
  } catch (err) {
    exited = Promise.resolve({
      code: null,
      signal: null,
      error: err instanceof Error ? err : new Error(String(err)),
    });
  }
  return { app, runc, exited, pidPath, spawnedAt: new Date().toISOString() };
}

export function appExitCode(result: ProcessEnd): number | null {
  return result.code ?? (result.signal !== null ? 128 + result.signal : null);
}

function runcKill(dirs: RuntimeDirs, id: string, signal: string): void {
  // A container that ended (or is not made yet) makes runc fail: the later KILL, or its end, follows.
  spawnSync('runc', ['--root', dirs.runc, 'kill', id, signal], { stdio: 'ignore' });
}

/** Waits for every app; returns their ends in the order they came. */
export async function awaitApps(
  dirs: RuntimeDirs,
  podPath: string,
  manifest: PodManifest,
  runs: readonly AppRunning[],
): Promise<AppExit[]> {
  const ends: AppExit[] = [];
  const several = runs.length > 1;
  let killTimer: NodeJS.Timeout | undefined;
  const running = () => runs.filter((r) => !ends.some((e) => e.name === r.app.name));
  const stopOthers = () => {
    if (killTimer !== undefined) return;
    for (const r of running()) runcKill(dirs, r.app.containerId, 'TERM');
    killTimer = setTimeout(() => {
      for (const r of running()) runcKill(dirs, r.app.containerId, 'KILL');
    }, stopOthersGraceMs);
  };
  await Promise.all(
    runs.map(async (r) => {
      const result = await r.exited;
      const started = existsSync(r.pidPath);
      const end: AppExit = {
        name: r.app.name,
        exit_code: result.error || !started ? null : appExitCode(result),
        ...(started ? { started_at: r.spawnedAt } : {}),
        finished_at: new Date().toISOString(),
        ...(result.error
          ? { reason: `cannot run runc: ${result.error.message}` }
          : started
            ? {}
            : { reason: readRuncError(join(podPath, r.app.bundle)) }),
      };
      ends.push(end);
      if (!several) return;
      writeAppExits(podPath, ends);
      if (manifest.exitOnFirst || end.exit_code === null) stopOthers();
    }),
  );
  clearTimeout(killTimer);
  return ends;
}
