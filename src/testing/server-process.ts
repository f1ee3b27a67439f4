import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The compiled CLI, run the way bin/berth runs it: its exit code is main()'s. */
export const berthCliPath = fileURLToPath(new URL('../cli/main.js', import.meta.url));
export const berthCliImporter =
  'import(process.argv[1]).then(async m => process.exitCode = await m.main(process.argv.slice(2)))';

export interface ServerProcess {
  readonly child: ChildProcess;
  /** What the server printed first: the URL it listens on. */
  readonly url: string;
  readonly exited: Promise<number | null>;
  /** The last 4,000 characters the process wrote to stderr, for failure messages. */
  stderr(): string;
}

/**
 * A real `berth ARGS…` process (`server …`) that resolves once it printed its URL on its first
 * line, or rejects with its stderr if it exits first. `nodeArgs` go to node itself (--cpu-prof).
 */
export async function startServerProcess(
  args: readonly string[],
  options: {
    readonly nodeArgs?: readonly string[];
    /** A file that gets everything the server writes to stderr (its log), not only the tail. */
    readonly logFile?: string;
  } = {},
): Promise<ServerProcess> {
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), '-e', berthCliImporter, berthCliPath, ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stderr = '';
  if (options.logFile) child.stderr?.pipe(createWriteStream(options.logFile, { flags: 'a' }));
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) resolve(line.trim());
    });
    child.once('exit', (code) => reject(new Error(`berth ${args[0]} exited ${code}: ${stderr}`)));
  });
  return { child, url, exited, stderr: () => stderr };
}
