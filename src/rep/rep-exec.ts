import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { type WebSocket, WebSocketServer } from 'ws';
import {
  BerthError,
  checkTerminalSize,
  execChannel,
  execFrame,
  httpStatusByCode,
  InvalidArgumentError,
  isBerthError,
  limits,
  parseExecFrame,
} from '../core/index.js';
import type { Executor } from '../executor/index.js';
import { appNamePattern, appOciConfigPath, findApp } from '../runtime/index.js';
import { type ContainerPod, runningContainerPod } from './container-pods.js';
import { childPids, killTree, stdinTerminal } from './process-tree.js';

/** What one exec asks for: the rep's `/v1/exec` query (the server builds it from `POST /v1/exec`). */
export interface ExecSpec {
  readonly guid: string;
  /** One app of a pod of several (a pod sidecar); absent: the pod's own app. */
  readonly app?: string;
  readonly command: readonly string[];
  readonly tty: boolean;
  readonly stdin: boolean;
  readonly size?: { readonly cols: number; readonly rows: number } | undefined;
}

/** The rep's exec query: `guid`, `arg` (repeated, the argv), `tty=1`, `stdin=1`, `cols`, `rows`. */
export function execQuery(spec: ExecSpec): string {
  const q = new URLSearchParams({ guid: spec.guid });
  if (spec.app !== undefined) q.set('app', spec.app);
  for (const arg of spec.command) q.append('arg', arg);
  if (spec.tty) q.set('tty', '1');
  if (spec.stdin) q.set('stdin', '1');
  if (spec.size) {
    q.set('cols', String(spec.size.cols));
    q.set('rows', String(spec.size.rows));
  }
  return q.toString();
}

export function parseExecQuery(q: URLSearchParams): ExecSpec {
  const guid = q.get('guid') ?? '';
  const command = q.getAll('arg');
  if (!/^[A-Za-z0-9._:-]{1,256}$/.test(guid))
    throw new InvalidArgumentError('Invalid exec guid', { field: 'guid' });
  if (command.length === 0 || command.length > limits.maxArgs)
    throw new InvalidArgumentError('An exec needs a command (1 or more "arg")', { field: 'arg' });
  const app = q.get('app') ?? undefined;
  if (app !== undefined && !appNamePattern.test(app))
    throw new InvalidArgumentError(`Invalid exec app "${app.slice(0, 64)}"`, { field: 'app' });
  const size = checkTerminalSize(Number(q.get('cols')), Number(q.get('rows')));
  return {
    guid,
    ...(app !== undefined ? { app } : {}),
    command,
    tty: q.get('tty') === '1',
    stdin: q.get('stdin') === '1',
    size,
  };
}

/** `'a b'` → `'a b'` quoted for /bin/sh: script(1) runs its command through a shell. */
function shellQuote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * runc's argv to run `command` in the pod as its app runs (the named one of a pod of several, or
 * its first): that app's container, env, working dir and user.
 */
function runcExecArgs(
  runcRoot: string,
  found: ContainerPod,
  command: readonly string[],
  appName: string | undefined,
): string[] {
  const run = found.pod.manifest ? findApp(found.pod.manifest, appName) : undefined;
  const app = run?.app;
  const args = ['--root', runcRoot, 'exec', '--cwd', app?.cwd ?? '/'];
  for (const e of app?.env ?? []) args.push('--env', e);
  if (app?.user) args.push('--user', `${app.user.uid}:${app.user.gid}`);
  args.push(run?.containerId ?? found.pod.uuid, ...command);
  return args;
}

/**
 * Starts the command. Without a TTY it is `runc exec` with pipes. With one it is `runc exec` of a
 * terminal process (ttyExecProcess) under util-linux `script`: runc in the foreground opens the
 * container's pty itself and copies it to and from its own stdio, which `script` makes a pty of
 * ours, copied to and from our pipes. That outer pty carries later sizes: runc reads it again on
 * each SIGWINCH, which `stty -F` on it sends (resizeTerminal). No console socket (receiving the pty
 * master over SCM_RIGHTS, which berth's native addon does not do) is needed.
 */
function startExec(
  runcRoot: string,
  found: ContainerPod,
  spec: ExecSpec,
  tty: TtyExec | undefined,
): ChildProcess {
  if (!tty) {
    const args = runcExecArgs(runcRoot, found, spec.command, spec.app);
    return spawn('runc', args, { stdio: [spec.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  }
  const dir = mkdtempSync(join(tmpdir(), 'berth-exec-'));
  const path = join(dir, 'process.json');
  writeFileSync(path, JSON.stringify(tty.process));
  const size = spec.size ? `stty rows ${spec.size.rows} cols ${spec.size.cols} 2>/dev/null; ` : '';
  const args = ['--root', runcRoot, 'exec', '--process', path, tty.containerId];
  const child = spawn(
    'script',
    ['-qfec', `${size}exec runc ${args.map(shellQuote).join(' ')}`, '/dev/null'],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, SHELL: '/bin/sh' },
    },
  );
  child.once('close', () => rmSync(dir, { recursive: true, force: true }));
  return child;
}

/** What a TTY exec runs: the OCI process for `runc exec --process`, in which app's container. */
export interface TtyExec {
  readonly process: OciProcess;
  readonly containerId: string;
}

/**
 * A TTY exec's OCI process: the app's process from its bundle's config.json (env, capabilities,
 * rlimits, as runc's flags start from), with the command, working dir, env and user the flags would
 * give, and `consoleSize`. runc sizes the pty with it before the command starts; the outer pty's
 * size reaches the inner one only after, so a command that asks at once (`stty size`) could see 0×0
 * on a loaded cell. Conflict when the bundle is gone (the container stopped meanwhile).
 */
export function ttyExecProcess(found: ContainerPod, spec: ExecSpec): TtyExec {
  const run = found.pod.manifest ? findApp(found.pod.manifest, spec.app) : undefined;
  const configPath = appOciConfigPath(found.dir, run?.bundle ?? '');
  let config: { process?: OciProcess };
  try {
    config = JSON.parse(readFileSync(configPath, 'utf8')) as { process?: OciProcess };
  } catch (err) {
    throw new BerthError(
      'conflict',
      `Container ${spec.guid} has no readable bundle (${err instanceof Error ? err.message : String(err)}): nothing to exec into`,
    );
  }
  const base: OciProcess = config.process ?? { user: { uid: 0, gid: 0 } };
  const app = run?.app;
  return {
    containerId: run?.containerId ?? found.pod.uuid,
    process: {
      ...base,
      terminal: true,
      args: [...spec.command],
      cwd: app?.cwd ?? '/',
      env: [...(base.env ?? []), ...(app?.env ?? [])],
      user: app?.user ? { ...base.user, uid: app.user.uid, gid: app.user.gid } : base.user,
      ...(spec.size ? { consoleSize: { height: spec.size.rows, width: spec.size.cols } } : {}),
    },
  };
}

/** The fields of an OCI runtime-spec process that a TTY exec sets; the rest are kept as they are. */
interface OciProcess {
  readonly terminal?: boolean;
  readonly consoleSize?: { readonly height: number; readonly width: number };
  readonly user: { readonly uid: number; readonly gid: number };
  readonly args?: readonly string[];
  readonly env?: readonly string[];
  readonly cwd?: string;
}

/** A TTY exec's new window size: stty on script's pty, which signals SIGWINCH to runc there. */
function resizeTerminal(scriptPid: number | undefined, size: { cols: number; rows: number }): void {
  if (scriptPid === undefined) return;
  const shell = childPids(scriptPid)[0];
  const tty = shell === undefined ? undefined : stdinTerminal(shell);
  if (!tty) return;
  spawnSync('stty', ['-F', tty, 'rows', String(size.rows), 'cols', String(size.cols)], { stdio: 'ignore' });
}

/** Runs one exec over an accepted WebSocket until the command exits or the client goes. */
function runExec(
  ws: WebSocket,
  child: ChildProcess,
  spec: ExecSpec,
  sessions: Set<() => Promise<void>>,
): void {
  let exited = false;
  const end = async () => {
    if (!exited && child.pid !== undefined) await killTree(child.pid);
  };
  sessions.add(end);
  const send = (channel: typeof execChannel.stdout | typeof execChannel.stderr) => (chunk: Buffer) => {
    if (ws.readyState !== ws.OPEN) return;
    ws.send(execFrame(channel, chunk));
    // A client slower than the command: stop reading its output until the socket drains.
    if (ws.bufferedAmount > 1024 * 1024) {
      child.stdout?.pause();
      child.stderr?.pause();
      const resume = setInterval(() => {
        if (ws.bufferedAmount > 256 * 1024 && ws.readyState === ws.OPEN) return;
        clearInterval(resume);
        child.stdout?.resume();
        child.stderr?.resume();
      }, 20);
    }
  };
  child.stdout?.on('data', send(execChannel.stdout));
  child.stderr?.on('data', send(execChannel.stderr));
  child.stdin?.on('error', () => {}); // the command closed its stdin: later input has nowhere to go
  const outputsDone = Promise.all(
    [child.stdout, child.stderr].map((s) => (s ? new Promise((r) => s.once('close', r)) : undefined)),
  );
  child.once('error', (err) => {
    exited = true;
    sessions.delete(end);
    if (ws.readyState === ws.OPEN) {
      ws.send(execFrame(execChannel.error, JSON.stringify({ code: 'internal', message: err.message })));
      ws.close();
    }
  });
  child.once('exit', (code, signal) => {
    exited = true;
    sessions.delete(end);
    const exitCode = code ?? 128 + (signal ? (osSignals[signal] ?? 9) : 9);
    void outputsDone.then(() => {
      if (ws.readyState !== ws.OPEN) return;
      ws.send(execFrame(execChannel.exit, JSON.stringify({ exit_code: exitCode })));
      ws.close(1000);
    });
  });
  ws.on('message', (data: Buffer) => {
    const frame = parseExecFrame(data);
    if (!frame) return;
    if (frame.channel === execChannel.stdin) child.stdin?.write(frame.payload);
    else if (frame.channel === execChannel.stdinEnd) child.stdin?.end();
    else if (frame.channel === execChannel.resize && spec.tty) {
      const size = parseSize(frame.payload);
      if (size) resizeTerminal(child.pid, size);
    }
  });
  // The client went (or the server's relay did): the command and everything it started go too.
  ws.once('close', () => {
    sessions.delete(end);
    void end();
  });
  ws.on('error', () => ws.terminate());
}

function parseSize(payload: Buffer): { cols: number; rows: number } | undefined {
  try {
    const body = JSON.parse(payload.toString('utf8')) as { cols?: unknown; rows?: unknown };
    return checkTerminalSize(body.cols, body.rows);
  } catch {
    return undefined; // catch-all: a malformed resize is ignored, as a terminal ignores a bad size
  }
}

const osSignals: Readonly<Record<string, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGKILL: 9,
  SIGTERM: 15,
  SIGPIPE: 13,
};

/** An upgrade refused before the handshake: a plain HTTP answer with berth's error body. */
export function refuseUpgrade(socket: Duplex, err: BerthError): void {
  const body = JSON.stringify(err.toJSON());
  const status = httpStatusByCode[err.code];
  socket.end(
    `HTTP/1.1 ${status} ${err.code}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * The rep's `GET /v1/exec` WebSocket (frames: core/exec-channels.ts): runs a command in a running
 * container of this cell. Checked before the handshake, so a missing container is a plain 404 and
 * a stopped one 409, with berth's error body. The caller is the server (`POST /v1/exec` there
 * checks the user's role and records the exec in the container's history) with the rep's token.
 */
export function attachRepExec(
  app: FastifyInstance,
  executor: Executor,
  authorized: (req: IncomingMessage) => boolean,
): void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  const sessions = new Set<() => Promise<void>>();
  app.addHook('onClose', async () => {
    await Promise.all([...sessions].map((end) => end()));
    wss.close();
  });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://rep');
    if (url.pathname !== '/v1/exec')
      return refuseUpgrade(socket, new BerthError('not_found', 'No such WebSocket'));
    if (!authorized(req))
      return refuseUpgrade(socket, new BerthError('unauthenticated', 'Invalid rep token'));
    let spec: ExecSpec;
    let found: ContainerPod;
    let tty: TtyExec | undefined;
    try {
      spec = parseExecQuery(url.searchParams);
      found = runningContainerPod(executor, spec.guid);
      tty = spec.tty ? ttyExecProcess(found, spec) : undefined;
    } catch (err) {
      if (!isBerthError(err)) throw err;
      return refuseUpgrade(socket, err);
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('error', () => ws.terminate());
      let child: ChildProcess;
      try {
        child = startExec(executor.runtime.store.dirs.runc, found, spec, tty);
      } catch (err) {
        // catch-all: the host could not start runc (its temp dir full, say); this exec fails, not the cell
        const message = err instanceof Error ? err.message : String(err);
        ws.send(execFrame(execChannel.error, JSON.stringify({ code: 'internal', message })));
        ws.close();
        return;
      }
      runExec(ws, child, spec, sessions);
    });
  });
}
