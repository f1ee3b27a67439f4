import { join } from 'node:path';
import { clusterSingletons, dashboardPlugin, startBbsServer } from '../api/index.js';
import type { BbsStore } from '../bbs/index.js';
import { ensurePrivateDir, InvalidArgumentError, parseDuration } from '../core/index.js';
import { defaultCrashPolicy } from '../rep/index.js';
import { type CommandSpec, dataDir, stringOption, untilStopSignal } from './command.js';
import {
  taskCallbackConfigFromFlags,
  taskCallbackServerFlags,
  taskCallbackServerUsage,
} from './task-commands.js';

const server: CommandSpec = {
  name: 'server',
  summary:
    'Run the BBS: the cluster state store and its HTTP API (SQLite in the data dir, or PostgreSQL). Several servers on one PostgreSQL share the work; singletons run in one of them.',
  usage: `berth server [--listen HOST:PORT] [--db PATH|postgres://…] [--dir DIR] [--auth tokens|none] [--lease-ttl 15s] [--event-retention 24h] [--convergence-interval 30s] [--auction-interval 500ms] [--crash-backoff-base 30s] [--crash-backoff-max 16m] [--unclaimed-timeout 30s] [--task-kick-interval 30s] [--task-pending-limit 30m] [--task-completed-ttl 2m] [--allow-private-callbacks] ${taskCallbackServerUsage}`,
  options: {
    listen: { type: 'string' },
    db: { type: 'string' },
    'lease-ttl': { type: 'string' },
    'event-retention': { type: 'string' },
    'event-poll': { type: 'string' },
    auth: { type: 'string' },
    ...taskCallbackServerFlags,
    'convergence-interval': { type: 'string' },
    'auction-interval': { type: 'string' },
    'crash-backoff-base': { type: 'string' },
    'crash-backoff-max': { type: 'string' },
    'unclaimed-timeout': { type: 'string' },
    'task-kick-interval': { type: 'string' },
    'task-pending-limit': { type: 'string' },
    'task-completed-ttl': { type: 'string' },
    // Task callbacks and webhooks to loopback/link-local addresses (refused by default: SSRF).
    'allow-private-callbacks': { type: 'boolean' },
  },
  async run(ctx) {
    // A first start on a fresh machine creates the data dir (SQLite cannot create its directory).
    // Private (0700): the database and tokens below it are for root alone.
    ensurePrivateDir(dataDir(ctx.values));
    const db = stringOption(ctx.values, 'db') ?? join(dataDir(ctx.values), 'bbs.sqlite3');
    const leaseTtl = stringOption(ctx.values, 'lease-ttl');
    const retention = stringOption(ctx.values, 'event-retention');
    const poll = stringOption(ctx.values, 'event-poll');
    const auth = stringOption(ctx.values, 'auth') ?? 'tokens';
    if (auth !== 'tokens' && auth !== 'none') {
      throw new InvalidArgumentError(`Invalid --auth "${auth}": expected tokens or none`, { flag: 'auth' });
    }
    const duration = (flag: string, fallback: string) =>
      parseDuration(stringOption(ctx.values, flag) ?? fallback, `--${flag}`);
    // The auctioneer and converger run only while this server holds their lease.
    const singletons = (store: BbsStore) =>
      clusterSingletons(store, {
        convergenceIntervalMs: duration('convergence-interval', '30s'),
        auctionIntervalMs: duration('auction-interval', '500ms'),
        crashPolicy: {
          ...defaultCrashPolicy,
          baseMs: duration('crash-backoff-base', '30s'),
          maxMs: duration('crash-backoff-max', '16m'),
        },
        unclaimedStartTimeoutMs: duration('unclaimed-timeout', '30s'),
        taskKickIntervalMs: duration('task-kick-interval', '30s'),
        taskPendingLimitMs: duration('task-pending-limit', '30m'),
        taskCompletedTtlMs: duration('task-completed-ttl', '2m'),
      });
    const running = await startBbsServer({
      singletons,
      plugins: [dashboardPlugin],
      db,
      auth,
      dataDir: dataDir(ctx.values),
      listen: stringOption(ctx.values, 'listen') ?? '127.0.0.1:8889',
      // Systems: deploys and teardowns run in the server that accepted them (src/model).
      systems: true,
      // The server is also the OCI registry cells pull from, backed by this data dir's images.
      registry: { dataDir: dataDir(ctx.values) },
      ...(leaseTtl !== undefined ? { leaseTtlMs: parseDuration(leaseTtl, '--lease-ttl') } : {}),
      ...(retention !== undefined ? { eventRetentionMs: parseDuration(retention, '--event-retention') } : {}),
      ...(poll !== undefined ? { eventPollMs: parseDuration(poll, '--event-poll') } : {}),
      taskCallbacks: taskCallbackConfigFromFlags(ctx.values),
      allowPrivateCallbacks: ctx.values['allow-private-callbacks'] === true,
    });
    // The first line on stdout is the URL, so scripts (and tests) using port 0 can find it.
    ctx.stdout.write(`${running.url}\n`);
    await untilStopSignal();
    await running.close();
    return 0;
  },
};

export const commands: readonly CommandSpec[] = [server];
