import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/**
 * The reference implementation of the OCI distribution spec, Debian's `docker-registry` (CNCF
 * distribution v2), as tests and the registry benchmark start it: its own temp dir, a config file
 * written here, an ephemeral port on loopback, storage on the filesystem with deletes on.
 */
export const referenceRegistryBinary = '/usr/bin/docker-registry';

export const hasReferenceRegistry =
  spawnSync(referenceRegistryBinary, ['--version'], { stdio: 'ignore' }).status === 0;

export interface ReferenceRegistry {
  /** `127.0.0.1:PORT`, as image references name it. */
  readonly host: string;
  readonly url: string;
  /** The server's process id (the benchmark reads its CPU time from /proc). */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

/** A port the kernel just gave out and took back: free unless another process races for it. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function waitReady(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`docker-registry exited with ${child.exitCode}: ${log()}`);
    const ok = await fetch(`${url}/v2/`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`docker-registry did not answer on ${url} within 30s: ${log()}`);
}

export async function startReferenceRegistry(dir: string): Promise<ReferenceRegistry> {
  mkdirSync(join(dir, 'storage'), { recursive: true });
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: error',
      '  accesslog:',
      '    disabled: true',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'storage')}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: ${host}`,
      '',
    ].join('\n'),
  );
  const child = spawn(referenceRegistryBinary, ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (c: Buffer) => {
    log = `${log}${c.toString()}`.slice(-4000);
  });
  const url = `http://${host}`;
  try {
    await waitReady(url, child, () => log);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    host,
    url,
    pid: child.pid,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
