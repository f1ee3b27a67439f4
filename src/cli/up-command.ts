import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterSingletons, consolePlugin, startBbsServer } from '../api/index.js';
import { TaskOutputClient } from '../bbs/index.js';
import { ensurePrivateDir, HttpJsonClient, parseDuration, sleep } from '../core/index.js';
import { HistoryClient } from '../history/index.js';
import {
  type ActionRecord,
  CellAgent,
  httpCellAgentTransport,
  isLiveAction,
  systemOperations,
} from '../model/index.js';
import { defaultCrashPolicy, serverRelations, startCell } from '../rep/index.js';
import { openImageStore } from '../runtime/image/index.js';
import { makeBusyboxRootfs } from '../runtime/index.js';
import { fingerprintCapacity, readMachineTotals } from './capacity-fingerprint.js';
import { optionalPositiveInt } from './cell-command.js';
import { type CommandHandler, dataDir, stringOption, untilStopSignal } from './command.js';
import { startServerRouter } from './server-router.js';
import { narrateEvents } from './up-narrator.js';

/** The example system `berth up` deploys (also in examples/shop.yaml). */
const exampleSystemPath = new URL('../../examples/shop.yaml', import.meta.url).pathname;

const up: CommandHandler = {
  name: 'up',
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
    // The server's JSON logs (a line per request) go to a file; the terminal gets a summary line
    // per event that matters (up-narrator.ts). --verbose also copies them to stderr.
    const logFile = join(dir, 'logs', 'up.log');
    mkdirSync(join(dir, 'logs'), { recursive: true, mode: 0o700 });
    const { default: pino } = await import('pino');
    const logStreams = [{ stream: pino.destination({ dest: logFile, append: true, mkdir: true }) }];
    if (ctx.values.verbose === true) logStreams.push({ stream: pino.destination(2) });
    const logger = pino({ name: 'berth-up' }, pino.multistream(logStreams));
    ctx.stdout.write(
      `berth up: server logs in ${logFile}${ctx.values.verbose === true ? ' and on stderr' : ' (--verbose: also on stderr)'}\n`,
    );
    const listen = stringOption(ctx.values, 'listen') ?? '127.0.0.1:8889';
    const server = await startBbsServer({
      logger,
      db,
      dataDir: dir,
      auth,
      listen,
      registry: { dataDir: dir },
      systems: true,
      plugins: [consolePlugin],
      singletons: (store, serverLogger) =>
        clusterSingletons(store, { convergenceIntervalMs, crashPolicy: defaultCrashPolicy }, serverLogger),
    });
    const router = await startServerRouter(ctx.values, server.store, listen, (line) =>
      ctx.stdout.write(`  ${line}\n`),
    ).catch(async (err: unknown) => {
      await server.close();
      throw err;
    });
    const tokenFile = join(dir, 'admin.token');
    const cellToken = existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : undefined;
    const history = new HistoryClient(server.url, cellToken ? { token: cellToken } : {});
    // The cell's own notes go with the server's logs (stderr too with --verbose).
    const log = (message: string) => logger.info({ cell: 'local' }, message);
    const cell = await startCell({
      bbs: server.store,
      cellId: 'local',
      zone: 'z1',
      dataDir: dir,
      // The machine's real memory and free disk unless the flags say otherwise (as Nomad
      // fingerprints): the example system scales to 20 instances on a laptop.
      capacity: {
        ...fingerprintCapacity(readMachineTotals(dir), {
          memory_mb: optionalPositiveInt(ctx, 'memory'),
          disk_mb: optionalPositiveInt(ctx, 'disk'),
        }),
        containers: 100,
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
      taskOutputs: new TaskOutputClient(server.url, cellToken ? { token: cellToken } : {}),
      postHistory: async (batch) => {
        await history.ingest(batch);
      },
    });
    const tokenPath = join(dir, 'admin.token');
    const adminToken =
      auth === 'tokens' && existsSync(tokenPath) ? readFileSync(tokenPath, 'utf8').trim() : '';
    ctx.stdout.write(`berth is up: ${server.url} (server listening)\n`);
    // The token rides in the fragment, which browsers never send to the server.
    const fragment = adminToken ? `#token=${adminToken}` : '';
    ctx.stdout.write(`  console: ${server.url}/console/${fragment}\n`);
    if (adminToken) ctx.stdout.write(`  admin token: ${tokenPath} (the CLI reads it from there)\n`);
    ctx.stdout.write(`  cell "local" joined: ${cell.url}\n`);
    if (router) ctx.stdout.write(`  router: ${router.url} (apps by their routes' hostnames)\n`);
    // From here on, a line per event that matters: instances running or crashing, deploys ending.
    const stop = new AbortController();
    const say = (line: string) => ctx.stdout.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
    const narrator = narrateEvents(server.store, say, { signal: stop.signal }).catch((err: unknown) =>
      logger.warn({ err }, 'berth up narrator stopped'),
    );
    let deployWatch: Promise<void> = Promise.resolve();
    if (!ctx.values['no-example'] && existsSync(exampleSystemPath)) {
      const client = new HttpJsonClient(server.url, { token: adminToken || undefined });
      try {
        const action = await client.call(systemOperations.deploy, {
          body: { definition: readFileSync(exampleSystemPath, 'utf8') },
        });
        ctx.stdout.write(
          `  example system "shop" deploying (deploy ${action.id}): berth system status shop\n`,
        );
        if (router) ctx.stdout.write(`  example app: ${exampleAppUrl(router.port)}\n`);
        deployWatch = watchAction(client, action, say, stop.signal);
      } catch (err) {
        ctx.stdout.write(
          `  example system not deployed: ${err instanceof Error ? err.message : String(err)}\n`,
        );
      }
    }
    await untilStopSignal();
    stop.abort();
    await Promise.all([narrator, deployWatch]);
    // Containers keep running (no daemon owns them); the next `berth up` adopts them.
    await cell.close();
    await router?.close();
    await server.close();
    return 0;
  },
};

/**
 * The URL of the example system's web service (its route in examples/shop.yaml) on the router:
 * `*.localhost` resolves to 127.0.0.1 in browsers and curl, so it opens as printed.
 */
export function exampleAppUrl(routerPort: number): string {
  return `http://${exampleHostname}${routerPort === 80 ? '' : `:${routerPort}`}/`;
}
const exampleHostname = 'web.shop.berth.localhost';

/** Says how a deploy or teardown ended, once it has. */
async function watchAction(
  client: HttpJsonClient,
  action: ActionRecord,
  say: (line: string) => void,
  signal: AbortSignal,
): Promise<void> {
  let current = action;
  try {
    while (isLiveAction(current.state)) {
      await sleep(1000, signal);
      if (signal.aborted) return;
      current = await client.call(systemOperations.getAction, { params: { id: action.id } });
    }
    say(
      current.state === 'succeeded'
        ? `${current.kind} ${current.id} of system ${current.system} succeeded`
        : `${current.kind} ${current.id} of system ${current.system} failed: ${current.reason}`,
    );
  } catch (err) {
    if (!signal.aborted)
      say(`lost track of ${action.kind} ${action.id}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export const commands: readonly CommandHandler[] = [up];
