import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterSingletons, dashboardPlugin, startBbsServer } from '../api/index.js';
import { ensurePrivateDir, parseDuration } from '../core/index.js';
import { HistoryClient } from '../history/index.js';
import { CellAgent, httpCellAgentTransport } from '../model/index.js';
import { defaultCrashPolicy, serverRelations, startCell } from '../rep/index.js';
import { makeBusyboxRootfs } from '../runtime/busybox-rootfs.js';
import { openImageStore } from '../runtime/image/index.js';
import { type CommandSpec, dataDir, intOption, stringOption, untilStopSignal } from './command.js';

/** The example system `berth up` deploys (also in examples/shop.yaml). */
const exampleSystemPath = new URL('../../examples/shop.yaml', import.meta.url).pathname;

const up: CommandSpec = {
  name: 'up',
  summary:
    'Run berth on this machine: the server (BBS, auctioneer, converger, registry, API, dashboard) on the embedded SQLite, one local cell, and the example system.',
  usage:
    'berth up [--dir DIR] [--listen HOST:PORT] [--memory MB] [--disk MB] [--no-example] [--convergence-interval 30s] [--poll-interval 5s]',
  options: {
    listen: { type: 'string' },
    memory: { type: 'string' },
    disk: { type: 'string' },
    'no-example': { type: 'boolean' },
    'convergence-interval': { type: 'string' },
    'poll-interval': { type: 'string' },
    auth: { type: 'string' },
  },
  async run(ctx) {
    const dir = dataDir(ctx.values);
    // Private (0700): the database, tokens and pods below it are for root alone.
    ensurePrivateDir(dir);
    const db = join(dir, 'bbs.sqlite3');
    const images = openImageStore(dir);
    // The example needs an image; the busybox of Debian's busybox-static makes one offline.
    if (!images.list().some((image) => image.names.includes('bb:1'))) {
      const { mkdtempSync, rmSync } = await import('node:fs');
      // Outside the store: an import clears the store's own tmp/ of leftovers first.
      const tmp = mkdtempSync(join(tmpdir(), 'berth-up-'));
      try {
        await images.importRootfs(makeBusyboxRootfs(join(tmp, 'rootfs')), 'bb:1');
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    }
    const convergenceIntervalMs = parseDuration(
      stringOption(ctx.values, 'convergence-interval') ?? '10s',
      '--convergence-interval',
    );
    const pollIntervalMs = parseDuration(
      stringOption(ctx.values, 'poll-interval') ?? '2s',
      '--poll-interval',
    );
    const auth = stringOption(ctx.values, 'auth') === 'none' ? 'none' : 'tokens';
    const server = await startBbsServer({
      db,
      dataDir: dir,
      auth,
      listen: stringOption(ctx.values, 'listen') ?? '127.0.0.1:8889',
      registry: { dataDir: dir },
      systems: true,
      plugins: [dashboardPlugin],
      singletons: (store) =>
        clusterSingletons(store, { convergenceIntervalMs, crashPolicy: defaultCrashPolicy }),
    });
    const tokenFile = join(dir, 'admin.token');
    const cellToken = existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : undefined;
    const history = new HistoryClient(server.url, cellToken ? { token: cellToken } : {});
    const log = (message: string) => ctx.stderr.write(`berth cell local: ${message}\n`);
    const cell = await startCell({
      bbs: server.store,
      cellId: 'local',
      zone: 'z1',
      dataDir: dir,
      capacity: {
        memory_mb: intOption(ctx.values, 'memory') ?? 2048,
        disk_mb: intOption(ctx.values, 'disk') ?? 8192,
        containers: 50,
      },
      images,
      listen: '127.0.0.1:0',
      address: '127.0.0.1',
      pollIntervalMs,
      presenceTtlMs: 30_000,
      relations: serverRelations(server.url, 'local', cellToken),
      modelAgent: new CellAgent({
        cellId: 'local',
        transport: httpCellAgentTransport(server.url, 'local', cellToken),
        log,
      }),
      log,
      postHistory: async (batch) => {
        await history.ingest(batch);
      },
    });
    const tokenPath = join(dir, 'admin.token');
    const adminToken =
      auth === 'tokens' && existsSync(tokenPath) ? readFileSync(tokenPath, 'utf8').trim() : '';
    ctx.stdout.write(`berth is up: ${server.url}\n`);
    // The token rides in the fragment, which browsers never send to the server.
    ctx.stdout.write(`  dashboard: ${server.url}/${adminToken ? `#token=${adminToken}` : ''}\n`);
    if (adminToken) ctx.stdout.write(`  admin token: ${tokenPath} (the CLI reads it from there)\n`);
    ctx.stdout.write(`  cell "local": ${cell.url}\n`);
    if (!ctx.values['no-example'] && existsSync(exampleSystemPath)) {
      const token =
        auth === 'tokens' && existsSync(tokenPath) ? readFileSync(tokenPath, 'utf8').trim() : undefined;
      const response = await fetch(`${server.url}/v1/deploys`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify({ definition: readFileSync(exampleSystemPath, 'utf8') }),
      });
      const body = (await response.json().catch(() => ({}))) as { id?: string; message?: string };
      ctx.stdout.write(
        response.ok
          ? `  example system "shop" deploying (deploy ${body.id ?? '?'}): berth system status shop\n`
          : `  example system not deployed: ${body.message ?? `HTTP ${response.status}`}\n`,
      );
    }
    await untilStopSignal();
    // Containers keep running (no daemon owns them); the next `berth up` adopts them.
    await cell.close();
    await server.close();
    return 0;
  },
};

export const commands: readonly CommandSpec[] = [up];
