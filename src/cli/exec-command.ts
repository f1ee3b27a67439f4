import { WebSocket } from 'ws';
import { BerthError, execChannel, execFrame, InvalidArgumentError, parseExecFrame } from '../core/index.js';
import { booleanOption, type CommandContext, type CommandHandler, stringOption } from './command.js';
import { serverClient } from './server-client.js';
import { resolveServerTarget } from './server-target.js';

/** `APP/INDEX` (or `SYSTEM/SERVICE/INDEX`): the last segment is the index when it is a number; else 0. */
export function parseInstanceRef(text: string): { app: string; index: number } {
  const slash = text.lastIndexOf('/');
  const last = slash === -1 ? '' : text.slice(slash + 1);
  if (/^\d+$/.test(last)) return { app: text.slice(0, slash), index: Number(last) };
  if (text === '' || text.endsWith('/'))
    throw new InvalidArgumentError(`Invalid instance "${text}": expected APP/INDEX`, { field: 'instance' });
  return { app: text, index: 0 };
}

/** The exit code berth gives an exec whose stream broke before the command's exit code came. */
export const execStreamLostExitCode = 255;

/** `berth exec APP/INDEX [-i] [-t] -- CMD`, `berth exec --task GUID -- CMD`: docs/logs-and-exec.md. */
async function runExec(ctx: CommandContext): Promise<number> {
  const task = stringOption(ctx.values, 'task');
  const positional = ctx.positionals[0];
  if ((task === undefined) === (positional === undefined))
    throw new InvalidArgumentError('Name one instance: APP/INDEX or --task GUID', { flag: 'task' });
  if (ctx.rest.length === 0) throw new InvalidArgumentError('berth exec needs a command after "--"');
  const tty = booleanOption(ctx.values, 'tty');
  const interactive = booleanOption(ctx.values, 'interactive') || tty;
  const stdout = process.stdout;
  const size = tty && stdout.isTTY ? { cols: stdout.columns, rows: stdout.rows } : {};
  const ticket = await serverClient(ctx).request<{ path: string }>('POST', '/v1/exec', {
    body: {
      ...(task !== undefined ? { task } : parseInstanceRef(positional ?? '')),
      command: ctx.rest,
      tty,
      stdin: interactive,
      ...size,
    },
  });
  const target = resolveServerTarget(ctx.values);
  const ws = new WebSocket(`${target.url.replace(/^http/, 'ws')}${ticket.path}`, {
    perMessageDeflate: false,
  });
  const stdin = process.stdin;
  const raw = tty && stdin.isTTY;
  const onInput = (chunk: Buffer) =>
    ws.readyState === ws.OPEN && ws.send(execFrame(execChannel.stdin, chunk));
  const onEnd = () => ws.readyState === ws.OPEN && ws.send(execFrame(execChannel.stdinEnd));
  const onResize = () =>
    ws.readyState === ws.OPEN &&
    ws.send(execFrame(execChannel.resize, JSON.stringify({ cols: stdout.columns, rows: stdout.rows })));
  return new Promise<number>((resolve, reject) => {
    let outcome: { code: number } | { error: BerthError } | undefined;
    ws.once('open', () => {
      if (interactive) {
        if (raw) stdin.setRawMode(true);
        stdin.on('data', onInput);
        stdin.once('end', onEnd);
        stdin.resume();
      }
      if (tty) stdout.on('resize', onResize);
    });
    ws.on('message', (data: Buffer) => {
      const frame = parseExecFrame(data);
      if (!frame) return;
      if (frame.channel === execChannel.stdout) ctx.stdout.write(frame.payload);
      else if (frame.channel === execChannel.stderr) ctx.stderr.write(frame.payload);
      else if (frame.channel === execChannel.exit)
        outcome = { code: (JSON.parse(frame.payload.toString()) as { exit_code: number }).exit_code };
      else if (frame.channel === execChannel.error) {
        const body = JSON.parse(frame.payload.toString()) as { code?: string; message?: string };
        outcome = { error: new BerthError('internal', body.message ?? 'The exec failed on its cell') };
      }
    });
    ws.once('unexpected-response', (_req, res) => {
      outcome = {
        error: new BerthError('unavailable', `The server refused the exec stream (HTTP ${res.statusCode})`),
      };
      ws.terminate();
    });
    ws.once('error', (err) => {
      outcome ??= { error: new BerthError('unavailable', `The exec stream failed: ${err.message}`) };
    });
    ws.once('close', () => {
      stdin.off('data', onInput);
      stdin.off('end', onEnd);
      if (raw) stdin.setRawMode(false);
      stdin.pause();
      stdout.off('resize', onResize);
      if (outcome === undefined) {
        ctx.stderr.write('berth exec: the stream ended before the command exited\n');
        resolve(execStreamLostExitCode);
      } else if ('code' in outcome) resolve(outcome.code);
      else reject(outcome.error);
    });
  });
}

export const commands: readonly CommandHandler[] = [{ name: 'exec', run: runExec }];
