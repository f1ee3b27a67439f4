import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The CLI as users run it: bin/berth of the checkout whose dist/ this file was built into. */
const binBerth = fileURLToPath(new URL('../../bin/berth', import.meta.url));

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Starts `berth ARGS` as a real OS process, exactly as a user's shell would. */
export function spawnBerth(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): ChildProcess {
  return spawn(binBerth, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export function runBerth(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<CliResult> {
  return collect(spawnBerth(args, env));
}

/** Runs any program (another entry of berth, a link to it) to its end, its output collected. */
export function runProgram(command: string, args: readonly string[]): Promise<CliResult> {
  return collect(spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
}

function collect(child: ChildProcess): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}
