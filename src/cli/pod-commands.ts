import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, InvalidArgumentError, parseDuration } from '../core/index.js';
import {
  factsOf,
  historyIdOf,
  noteExit,
  noteExitedPods,
  noteLaunch,
  noteStart,
  noteUserExec,
  noteUserStop,
  podDropbox,
} from '../history/direct-pod-history.js';
import type {
  NetMode,
  NetworkAttachment,
  PodInfo,
  PodLocation,
  PodManifest,
  PodStarted,
} from '../runtime/index.js';
import { podFiles } from '../runtime/pod-dirs.js';
import { parseLogSizeMax } from '../runtime/pod-log.js';
import { copyLog, endLog, followLog, LogRecordWriter } from '../runtime/pod-log-reader.js';
import { findApp, PodRuntime, type PrepareOptions, parseMemory, podApps } from '../runtime/pod-runtime.js';
import {
  booleanOption,
  type CommandContext,
  type CommandHandler,
  dataDir,
  formatOption,
  intOption,
  stringListOption,
  stringOption,
} from './command.js';
import { podAppsOptions } from './pod-app-args.js';
import { renderTable } from './table-output.js';

async function openRuntime(ctx: CommandContext): Promise<PodRuntime> {
  const dir = dataDir(ctx.values);
  // The image store loads only when a command resolves an image (prepare/run); the registry
  // client only for an image another registry holds (`REGISTRY/NAME[:TAG|@DIGEST]`), pulled then.
  return new PodRuntime(dir, {
    resolve: async (ref) => {
      const { openImageStore } = await import('../runtime/image/index.js');
      const store = openImageStore(dir);
      if (!namesRegistry(ref)) return store.resolve(ref);
      const { defaultServerUrl, pullingImageResolver } = await import('../registry/index.js');
      return pullingImageResolver({ store, serverUrl: defaultServerUrl }).resolve(ref);
    },
  });
}

/** Whether an image reference names a registry host or a digest (docker's rule: a `.`, a port or localhost). */
function namesRegistry(ref: string): boolean {
  const slash = ref.indexOf('/');
  const first = slash === -1 ? '' : ref.slice(0, slash);
  return ref.includes('@') || first === 'localhost' || first.includes('.') || first.includes(':');
}

function prepareOptions(ctx: CommandContext): PrepareOptions {
  const v = ctx.values;
  const net = stringOption(v, 'net') ?? 'private';
  if (net !== 'private' && net !== 'host' && net !== 'none') {
    throw new InvalidArgumentError(`Invalid --net "${net}": expected private, host or none`, { flag: 'net' });
  }
  const memory = stringOption(v, 'memory');
  const pids = intOption(v, 'pids-limit');
  // As podman's flag: a positive count, or 0 or -1 for no limit at all (the default is 2048).
  if (pids !== undefined && pids < -1)
    throw new InvalidArgumentError(`--pids-limit must be at least 1, or 0 or -1 for no limit, got ${pids}`, {
      flag: 'pids-limit',
    });
  const options: {
    -readonly [K in keyof PrepareOptions]: PrepareOptions[K];
  } = {
    ...podAppsOptions(v as Parameters<typeof podAppsOptions>[0], ctx.rest),
    env: stringListOption(v, 'env'),
    net: net as NetMode,
  };
  if (booleanOption(v, 'exit-on-first')) options.exitOnFirst = true;
  const name = stringOption(v, 'name');
  if (name !== undefined) options.name = name;
  const entrypoint = stringOption(v, 'entrypoint');
  if (entrypoint !== undefined) options.entrypoint = entrypoint;
  const workdir = stringOption(v, 'workdir');
  if (workdir !== undefined) options.workdir = workdir;
  const user = stringOption(v, 'user');
  if (user !== undefined) options.user = user;
  if (memory !== undefined) options.memoryBytes = parseMemory(memory);
  if (pids !== undefined) options.pidsLimit = pids > 0 ? pids : null;
  const logSizeMax = stringOption(v, 'log-size-max');
  if (logSizeMax !== undefined) options.logSizeMax = parseLogSizeMax(logSizeMax);
  const ports = stringListOption(v, 'publish').map(parsePublish);
  if (ports.length > 0) options.ports = ports;
  return options;
}

function parsePublish(text: string): { host_port: number; container_port: number } {
  const match = /^(\d{1,5}):(\d{1,5})$/.exec(text);
  const host = Number(match?.[1]);
  const container = Number(match?.[2]);
  if (!match || host < 1 || host > 65535 || container < 1 || container > 65535) {
    throw new InvalidArgumentError(
      `Invalid --publish "${text}": expected HOSTPORT:CONTAINERPORT, ports 1-65535`,
      { flag: 'publish' },
    );
  }
  return { host_port: host, container_port: container };
}

function requireImage(ctx: CommandContext): string {
  const image = ctx.positionals[0];
  if (image === undefined) throw new InvalidArgumentError('An image is required');
  return image;
}

/** Detached runs and run-prepared exit with the app's code only in the foreground. */
async function runLocation(
  runtime: PodRuntime,
  ctx: CommandContext,
  claimed: {
    location: PodLocation;
    manifest: PodManifest;
    lockFd: number;
    network?: Promise<NetworkAttachment>;
  },
  opts: { detach: boolean; remove: boolean },
): Promise<number> {
  let location = claimed.location;
  if (location.phase !== 'run') {
    if (!runtime.store.move(location, 'run'))
      throw new BerthError('internal', `Pod ${location.uuid} vanished while starting`);
    location = { uuid: location.uuid, phase: 'run' };
  }
  const run = { uuid: location.uuid, phase: 'run' as const };
  const dropbox = podDropbox(dataDir(ctx.values));
  if (opts.detach) {
    await runtime.startDetached(run, claimed.lockFd, { remove: opts.remove });
    try {
      noteStart(dropbox, factsOf(runtime, runtime.status(run.uuid)));
    } catch {
      // Already ended and removed (--rm): nothing left to read; its launch is recorded.
    }
    ctx.stdout.write(`${run.uuid}\n`);
    return 0;
  }
  const { runForeground } = await import('../runtime/foreground-run.js');
  const dir = runtime.store.path(run);
  const exit = await runForeground(runtime, run, claimed.manifest, claimed.lockFd, {
    ...(claimed.network ? { network: claimed.network } : {}),
    stdout: ctx.stdout,
    stderr: ctx.stderr,
    remove: opts.remove,
    onExit: (podExit) =>
      noteExit(
        dropbox,
        {
          uuid: run.uuid,
          dir,
          manifest: claimed.manifest,
          started: readStarted(dir),
          exit: podExit,
        },
        'event',
      ).catch((err: unknown) => {
        ctx.stderr.write(`berth: could not record the pod's history: ${String(err)}\n`);
      }),
  });
  if (exit.exit_code === null) {
    ctx.stderr.write(`berth: pod ${run.uuid} did not run: ${exit.reason ?? 'unknown reason'}\n`);
    return 125;
  }
  return exit.exit_code;
}

const prepare: CommandHandler = {
  name: 'prepare',
  async run(ctx) {
    const runtime = await openRuntime(ctx);
    const uuid = await runtime.prepareOnly(requireImage(ctx), prepareOptions(ctx));
    const manifest = runtime.store.readManifest({ uuid, phase: 'prepared' });
    if (manifest) noteLaunch(podDropbox(dataDir(ctx.values)), uuid, manifest);
    ctx.stdout.write(`${uuid}\n`);
    return 0;
  },
};

const run: CommandHandler = {
  name: 'run',
  async run(ctx) {
    const runtime = await openRuntime(ctx);
    const detach = booleanOption(ctx.values, 'detach');
    // In the foreground this process is stage 1: its CNI plugins may run while the pod is made.
    const prepared = await runtime.prepare(requireImage(ctx), {
      ...prepareOptions(ctx),
      attachNetworkNow: !detach,
    });
    noteLaunch(podDropbox(dataDir(ctx.values)), prepared.location.uuid, prepared.manifest);
    return runLocation(runtime, ctx, prepared, { detach, remove: booleanOption(ctx.values, 'rm') });
  },
};

const runPrepared: CommandHandler = {
  name: 'run-prepared',
  async run(ctx) {
    const runtime = await openRuntime(ctx);
    const claimed = runtime.claimPrepared(ctx.positionals[0] ?? '');
    return runLocation(runtime, ctx, claimed, {
      detach: booleanOption(ctx.values, 'detach'),
      remove: booleanOption(ctx.values, 'rm'),
    });
  },
};

/** The JSON shape of a pod in `status --format json` and `list --format json`. */
export function podJson(info: PodInfo): Record<string, unknown> {
  return {
    uuid: info.uuid,
    name: info.manifest?.name ?? '',
    state: info.state,
    image: info.manifest?.image.ref ?? '',
    image_id: info.manifest?.image.id ?? '',
    command: info.manifest?.app.args ?? [],
    pid: info.pid,
    address: info.network?.address ?? null,
    ports: info.network?.ports ?? info.manifest?.ports ?? [],
    created: info.manifest?.created ?? null,
    started: info.started?.started_at ?? null,
    finished: info.exit?.finished_at ?? null,
    exit_code: info.exit?.exit_code ?? null,
    reason:
      info.exit?.reason ?? (info.state === 'exited' && !info.exit ? 'exit status was not recorded' : null),
    apps: appsJson(info),
    labels: info.manifest?.labels ?? {},
  };
}

/** Each app of the pod: its name, image, state and exit code (a pod of one app has one). */
function appsJson(info: PodInfo): Record<string, unknown>[] {
  if (!info.manifest) return [];
  const ends = info.exit?.apps ?? info.appExits;
  return podApps(info.manifest).map((app) => {
    const end =
      ends === undefined
        ? info.exit
          ? { ...info.exit, name: app.name }
          : undefined
        : ends.find((e) => e.name === app.name);
    return {
      name: app.name,
      image: app.image.ref,
      state: end ? 'exited' : info.state,
      exit_code: end?.exit_code ?? null,
      ...(end?.reason !== undefined ? { reason: end.reason } : {}),
    };
  });
}

const status: CommandHandler = {
  name: 'status',
  async run(ctx) {
    const runtime = await openRuntime(ctx);
    const format = formatOption(ctx, ['text', 'json']);
    const waitValue = ctx.values.wait;
    const ref = ctx.positionals[0] ?? '';
    let info: PodInfo;
    if (waitValue !== undefined) {
      const timeout = typeof waitValue === 'string' ? parseDuration(waitValue, '--wait') : undefined;
      info = await runtime.waitExit(ref, timeout);
    } else {
      info = runtime.status(ref);
    }
    await noteExitedPods(runtime, podDropbox(dataDir(ctx.values)), [info]);
    const json = podJson(info);
    if (format === 'json') ctx.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
    else {
      for (const [key, value] of Object.entries(json)) {
        if (key === 'labels') continue;
        if (key === 'apps') {
          for (const app of value as { name: string; state: string; exit_code: number | null }[])
            ctx.stdout.write(`app.${app.name}=${app.state} ${app.exit_code ?? ''}\n`);
          continue;
        }
        ctx.stdout.write(`${key}=${Array.isArray(value) ? value.join(' ') : (value ?? '')}\n`);
      }
    }
    if (waitValue !== undefined) return info.exit?.exit_code ?? 125;
    return 0;
  },
};

const list: CommandHandler = {
  name: 'list',
  async run(ctx) {
    const runtime = await openRuntime(ctx);
    const format = formatOption(ctx, ['table', 'json']);
    const pods = runtime.store
      .list()
      .sort((a, b) => (a.manifest?.created ?? '').localeCompare(b.manifest?.created ?? ''));
    if (format === 'json') {
      ctx.stdout.write(`${JSON.stringify(pods.map(podJson), null, 2)}\n`);
      return 0;
    }
    const rows = pods.map((p) => [
      p.uuid,
      p.manifest?.name ?? '',
      p.manifest?.image.ref ?? '',
      p.state,
      p.manifest?.created ?? '',
      p.started?.started_at ?? '',
      p.exit?.exit_code === undefined || p.exit.exit_code === null ? '' : String(p.exit.exit_code),
    ]);
    ctx.stdout.write(
      renderTable(
        ['UUID', 'NAME', 'IMAGE', 'STATE', 'CREATED', 'STARTED', 'EXIT'],
        rows,
        !booleanOption(ctx.values, 'no-legend'),
      ),
    );
    return 0;
  },
};

const logs: CommandHandler = {
  name: 'logs',
  async run(ctx) {
    const runtime = await openRuntime(ctx);
    const pod = runtime.logDir(ctx.positionals[0] ?? '');
    const { info } = pod;
    const appName = stringOption(ctx.values, 'app');
    const dir =
      info.manifest && appName !== undefined
        ? join(pod.dir, findApp(info.manifest, appName).bundle)
        : pod.dir;
    // The app's stdout to ours, its stderr to ours, each line with its time on request.
    const out = new LogRecordWriter(
      { stdout: ctx.stdout, stderr: ctx.stderr },
      { timestamps: booleanOption(ctx.values, 'timestamps') },
    );
    // In chunks, never whole: a log is up to twice its cap (pod-log.ts), and a reader that is
    // slower than the disk holds berth back instead of filling its memory.
    if (!booleanOption(ctx.values, 'follow') || info.state !== 'running') await copyLog(dir, out);
    // Follow: what is there, then whatever is appended (across rotations) until the pod's lock drops.
    else await followLog(dir, out, runtime.waitExit(info.uuid));
    await endLog(out);
    return 0;
  },
};

const enter: CommandHandler = {
  name: 'enter',
  async run(ctx) {
    const runtime = await openRuntime(ctx);
    const info = runtime.status(ctx.positionals[0] ?? '');
    if (info.state !== 'running') {
      throw new BerthError('conflict', `Cannot enter pod ${info.uuid}: current state is ${info.state}`);
    }
    if (ctx.rest.length === 0) throw new InvalidArgumentError('berth enter needs a command after "--"');
    noteUserExec(podDropbox(dataDir(ctx.values)), historyIdOf(info.uuid, info.manifest), ctx.rest);
    const app = info.manifest ? findApp(info.manifest, stringOption(ctx.values, 'app')) : undefined;
    const env = app?.app.env ?? [];
    const cwd = app?.app.cwd ?? '/';
    const user = app?.app.user;
    const args = ['--root', runtime.store.dirs.runc, 'exec', '--cwd', cwd];
    for (const e of env) args.push('--env', e);
    if (user) args.push('--user', `${user.uid}:${user.gid}`);
    args.push(app?.containerId ?? info.uuid, ...ctx.rest);
    const child = spawn('runc', args, { stdio: 'inherit' });
    return new Promise((resolve) =>
      child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 125))),
    );
  },
};

const stop: CommandHandler = {
  name: 'stop',
  async run(ctx) {
    const runtime = await openRuntime(ctx);
    const timeout = parseDuration(stringOption(ctx.values, 'timeout') ?? '10', '--timeout');
    const pod = runtime.status(ctx.positionals[0] ?? '');
    // Who asked goes into the pod before the signal: its end is then this user's stop, not a crash.
    if (pod.state === 'running') {
      noteUserStop(
        podDropbox(dataDir(ctx.values)),
        runtime.store.path(pod),
        historyIdOf(pod.uuid, pod.manifest),
      );
    }
    const info = await runtime.stop(pod.uuid, timeout);
    ctx.stdout.write(`${info.uuid}\n`);
    return 0;
  },
};

const rm: CommandHandler = {
  name: 'rm',
  async run(ctx) {
    const runtime = await openRuntime(ctx);
    let failed = 0;
    for (const ref of ctx.positionals) {
      try {
        ctx.stdout.write(`${await runtime.remove(ref)}\n`);
      } catch (err) {
        failed++;
        ctx.stderr.write(`berth: ${err instanceof Error ? err.message : String(err)}\n`);
      }
    }
    return failed === 0 ? 0 : 1;
  },
};

const gc: CommandHandler = {
  name: 'gc',
  async run(ctx) {
    const runtime = await openRuntime(ctx);
    // Every end is in the history before gc may delete the pod.
    await noteExitedPods(runtime, podDropbox(dataDir(ctx.values)));
    const { collectGarbage } = await import('../runtime/index.js');
    const report = collectGarbage(runtime, {
      gracePeriodMs: parseDuration(stringOption(ctx.values, 'grace-period') ?? '30m', '--grace-period'),
      expirePreparedMs: parseDuration(
        stringOption(ctx.values, 'expire-prepared') ?? '24h',
        '--expire-prepared',
      ),
      markOnly: booleanOption(ctx.values, 'mark-only'),
    });
    for (const uuid of report.marked) ctx.stdout.write(`marked ${uuid}\n`);
    for (const uuid of report.discarded) ctx.stdout.write(`discarded ${uuid}\n`);
    for (const uuid of report.deleted) ctx.stdout.write(`deleted ${uuid}\n`);
    for (const entry of report.strays) ctx.stdout.write(`removed pods/${entry}: a file, not a pod\n`);
    const { recheckPodNetworkRules } = await import('../runtime/index.js');
    try {
      if (recheckPodNetworkRules() === 'added')
        ctx.stdout.write(
          "restored the pod network's firewall rules, subnet masquerade and host guard (they had been flushed)\n",
        );
    } catch (err) {
      // The pods are collected either way; outbound NAT is the network's, reported, not fatal.
      ctx.stderr.write(`berth: ${err instanceof Error ? err.message : String(err)}\n`);
    }
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [
  prepare,
  run,
  runPrepared,
  status,
  list,
  logs,
  enter,
  stop,
  rm,
  gc,
];

function readStarted(dir: string): PodStarted | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, podFiles.started), 'utf8')) as PodStarted;
  } catch {
    return undefined;
  }
}
