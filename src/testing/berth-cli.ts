import { type ChildProcess, spawn } from 'node:child_process';

/** The built CLI entry next to this file (dist/cli/main.js or any other outDir). */
const mainUrl = new URL('../cli/main.js', import.meta.url).href;

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Starts `berth ARGS` as a real OS process, exactly as a user's shell would (bin/berth's own entry). */
export function spawnBerth(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): ChildProcess {
  return spawn(
    process.execPath,
    [
      '-e',
      `import(${JSON.stringify(mainUrl)}).then((m) => m.runAndExit(process.argv.slice(1)))`,
      '--',
      ...args,
    ],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

export function runBerth(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<CliResult> {
  const child = spawnBerth(args, env);
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
