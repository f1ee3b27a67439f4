import { exitCodeByCode, isBerthError } from '../core/index.js';
import { type CommandEntry, commandHelp, parseCommandArgs } from './command.js';

/** 128 + SIGPIPE, what a shell reports for a filter whose reader went away. */
const sigpipeExitCode = 141;

/**
 * Runs one row of the command table with its arguments (the words naming it already taken off):
 * `--help` before any `--`, then parse, load the handler, run, and any error as a message and an
 * exit code.
 */
export async function runEntry(entry: CommandEntry, args: readonly string[]): Promise<number> {
  const help = args.findIndex((a) => a === '--help' || a === '-h');
  const dashDash = args.indexOf('--');
  if (help !== -1 && (dashDash === -1 || help < dashDash)) {
    process.stdout.write(commandHelp(entry));
    return 0;
  }
  const readerGone = (err: NodeJS.ErrnoException): void => {
    if (err.code !== 'EPIPE') throw err;
    if (!entry.outlivesReader) process.exit(sigpipeExitCode);
  };
  process.stdout.on('error', readerGone);
  process.stderr.on('error', readerGone);
  try {
    const parsed = parseCommandArgs(entry, args);
    const { commands } = await entry.load();
    const handler = commands.find((c) => c.name === entry.name);
    if (!handler) throw new Error(`berth ${entry.name} has no handler in its module`);
    return await handler.run({ ...parsed, stdout: process.stdout, stderr: process.stderr });
  } catch (err) {
    return reportError(err);
  }
}

/**
 * Lets stdout and stderr drain, then exits with `code`. On a pipe both are asynchronous: what the
 * reader has not taken yet is still queued in this process and process.exit would drop it (an
 * empty write calls back once all queued before it is written). The exit itself is explicit
 * because a timed-out `status --wait` leaves a blocked flock(2) on the thread pool.
 */
export async function exitAfterDrain(code: number): Promise<never> {
  await Promise.all(
    [process.stdout, process.stderr].map((stream) => new Promise((drained) => stream.write('', drained))),
  );
  process.exit(code);
}

export function reportError(err: unknown): number {
  if (isBerthError(err)) {
    process.stderr.write(`berth: ${err.message}\n`);
    return exitCodeByCode[err.code];
  }
  const message =
    err instanceof Error ? (process.env.BERTH_DEBUG ? (err.stack ?? err.message) : err.message) : String(err);
  process.stderr.write(`berth: internal error: ${message}\n`);
  return 125;
}
