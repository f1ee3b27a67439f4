import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';

const mainUrl = new URL('../cli/main.js', import.meta.url).href;

/**
 * A real `berth server` process (auth off, loopback, port 0) on `dir` for the registry
 * benchmarks; resolves with the URL it prints first. `nodeArgs` go to node ahead of the script
 * (`--cpu-prof` to profile the server).
 */
export function startBenchServer(
  dir: string,
  nodeArgs: readonly string[] = [],
): Promise<{ child: ChildProcess; url: string }> {
  mkdirSync(dir, { recursive: true });
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      '-e',
      `import(${JSON.stringify(mainUrl)}).then(async (m) => { process.exit(await m.main(process.argv.slice(1))); })`,
      '--',
      'server',
      '--auth',
      'none',
      '--listen',
      '127.0.0.1:0',
      '--dir',
      dir,
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const line = /^(http:\/\/\S+)\n/.exec(out);
      if (line?.[1]) resolve({ child, url: line[1] });
    });
    child.once('exit', (code) => reject(new Error(`berth server exited with ${code}`)));
  });
}
