import assert from 'node:assert/strict';
import { type ChildProcess, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ActualLRP, DesiredLRPDefinition } from '../bbs/index.js';
import { mountsUnder } from '../runtime/mounts.js';
import { runBerth, spawnBerth } from './berth-cli.js';
import { makeBusyboxRootfs } from './busybox-rootfs.js';

/** Resolves with the first stdout line of a berth process (servers and cells print their URL). */
export function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    let errText = '';
    child.stdout?.on('data', (c: Buffer) => {
      text += c.toString();
      const nl = text.indexOf('\n');
      if (nl !== -1) resolve(text.slice(0, nl).trim());
    });
    child.stderr?.on('data', (c: Buffer) => {
      errText += c.toString();
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before printing its URL: ${errText}`)));
  });
}

/** Polls `probe` until it returns a value; its last error goes into the timeout message. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`Timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(250);
  }
}

/** The body of `path` on an instance's first host port, once it answers 2xx. */
export function instanceText(a: ActualLRP, path: string): Promise<string> {
  return waitFor(`${a.process_guid}/${a.index} on ${a.cell_id} serves ${path}`, async () => {
    const response = await fetch(`http://${a.address}:${a.ports[0]?.host_port}${path}`, {
      signal: AbortSignal.timeout(2000),
    });
    return response.ok ? response.text() : undefined;
  });
}

/**
 * Real `berth server` and `berth cell` processes in one temp dir, every interval shrunk by flags,
 * and a cleanup that leaves no container, mount or process behind (e2e tests of issues 4–8).
 */
/**
 * A one-instance LRP of the cluster tests' image (`bb:1`, which `startServer` imports) in domain
 * `tests`, whose command loops until SIGTERM and then exits at once (a stop never waits out the
 * graceful-stop timeout); `extra` overrides any field.
 */
export function busyboxLrp(
  processGuid: string,
  extra: Partial<DesiredLRPDefinition> = {},
): DesiredLRPDefinition {
  return {
    process_guid: processGuid,
    domain: 'tests',
    instances: 1,
    image: 'bb:1',
    command: ['/bin/sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'],
    env: {},
    memory_mb: 16,
    disk_mb: 16,
    ports: [],
    routes: {},
    annotation: '',
    start_timeout_s: 60,
    placement_tags: [],
    ...extra,
  };
}

export class TestCluster {
  readonly root: string;
  readonly processes: ChildProcess[] = [];
  readonly cells = new Map<string, ChildProcess>();
  /** Everything each cell wrote to stderr, for failure messages. */
  readonly cellLogs = new Map<string, string>();
  readonly #cellDirs: string[] = [];

  constructor(prefix: string) {
    this.root = mkdtempSync(join(tmpdir(), prefix));
  }

  /** A server with `bb:1` (busybox) in its registry; resolves with its URL. */
  async startServer(
    name: string,
    convergenceInterval: string,
    extraArgs: readonly string[] = [],
  ): Promise<string> {
    const serverDir = join(this.root, name);
    const imported = await runBerth([
      'image',
      'import-rootfs',
      '--dir',
      serverDir,
      makeBusyboxRootfs(join(this.root, 'rootfs')),
      '--name',
      'bb:1',
    ]);
    assert.equal(imported.code, 0, imported.stderr);
    const server = spawnBerth([
      'server',
      '--dir',
      serverDir,
      '--listen',
      '127.0.0.1:0',
      '--auth',
      'none',
      '--convergence-interval',
      convergenceInterval,
      '--auction-interval',
      '200ms',
      '--crash-backoff-base',
      '2s',
      '--crash-backoff-max',
      '4s',
      '--unclaimed-timeout',
      '5s',
      '--lease-ttl',
      '2s',
      ...extraArgs,
    ]);
    this.processes.push(server);
    return firstLine(server);
  }

  /** A cell with 1 GiB, host ports portBase…portBase+99; resolves once it printed its rep URL. */
  async startCell(
    id: string,
    zone: string,
    portBase: number,
    serverUrl: string,
    extraArgs: readonly string[] = [],
  ): Promise<void> {
    const dir = join(this.root, id);
    this.#cellDirs.push(dir);
    const child = spawnBerth([
      'cell',
      '--bbs',
      serverUrl,
      '--id',
      id,
      '--zone',
      zone,
      '--dir',
      dir,
      '--memory',
      '1024',
      '--disk',
      '8192',
      '--poll-interval',
      '1s',
      '--presence-ttl',
      '3s',
      '--evacuation-timeout',
      '60s',
      '--ports',
      `${portBase}-${portBase + 99}`,
      // Later flags win (node's parseArgs), so a test can shorten e.g. the evacuation timeout.
      ...extraArgs,
    ]);
    this.processes.push(child);
    this.cells.set(id, child);
    this.cellLogs.set(id, '');
    child.stderr?.on('data', (c: Buffer) => {
      this.cellLogs.set(id, `${this.cellLogs.get(id) ?? ''}${c.toString()}`.slice(-20_000));
    });
    await firstLine(child);
  }

  /** Names of the runc containers a cell's runtime still has. */
  runcContainers(cellId: string): string[] {
    const runcRoot = join(this.root, cellId, 'runc');
    return existsSync(runcRoot) ? readdirSync(runcRoot) : [];
  }

  async cleanup(): Promise<void> {
    for (const child of this.processes) child.kill('SIGKILL');
    await sleep(200);
    for (const dir of this.#cellDirs) {
      const runcRoot = join(dir, 'runc');
      if (existsSync(runcRoot))
        for (const id of readdirSync(runcRoot))
          spawnSync('runc', ['--root', runcRoot, 'delete', '--force', id]);
      for (const point of mountsUnder(dir)) spawnSync('umount', ['-l', point]);
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}
