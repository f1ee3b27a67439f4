import { join } from 'node:path';
import { clusterSingletons, consolePlugin, startBbsServer } from '../api/index.js';
import { type BbsStore, defaultCellPacing } from '../bbs/index.js';
import { ensurePrivateDir, InvalidArgumentError, parseDuration, type ServiceLogger } from '../core/index.js';
import { defaultPostgresPoolSize } from '../db/index.js';
import { defaultCrashPolicy } from '../rep/index.js';
import {
  type CommandHandler,
  dataDir,
  intOption,
  type OptionValues,
  stringOption,
  untilStopSignal,
} from './command.js';
import { startServerRouter } from './server-router.js';

const server: CommandHandler = {
  name: 'server',
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
    const singletons = (store: BbsStore, logger: ServiceLogger | undefined) =>
      clusterSingletons(
        store,
        {
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
        },
        logger,
      );
    const running = await startBbsServer({
      singletons,
      maxPendingStarts: maxPendingStarts(ctx.values),
      cellPacing: {
        maxHeartbeatsPerSecond: positiveRate(
          ctx.values,
          'max-heartbeats-per-second',
          defaultCellPacing.maxHeartbeatsPerSecond,
        ),
        maxCellPassesPerSecond: positiveRate(
          ctx.values,
          'max-cell-passes-per-second',
          defaultCellPacing.maxCellPassesPerSecond,
        ),
      },
      plugins: [consolePlugin],
      db,
      poolSize: dbPoolSize(ctx.values),
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
    const listen = stringOption(ctx.values, 'listen') ?? '127.0.0.1:8889';
    let router: Awaited<ReturnType<typeof startServerRouter>>;
    try {
      router = await startServerRouter(ctx.values, running.store, listen, (line) =>
        ctx.stderr.write(`${line}\n`),
      );
    } catch (err) {
      await running.close();
      throw err;
    }
    // The first line on stdout is the URL, so scripts (and tests) using port 0 can find it.
    ctx.stdout.write(`${running.url}\n`);
    if (router) ctx.stdout.write(`router: ${router.url}\n`);
    await untilStopSignal();
    await router?.close();
    await running.close();
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [server];

/** `--db-pool-size`: at least 1; ignored by SQLite, whose one writer needs no pool. */
function dbPoolSize(values: OptionValues): number {
  const size = intOption(values, 'db-pool-size') ?? defaultPostgresPoolSize;
  if (size < 1)
    throw new InvalidArgumentError(`--db-pool-size must be at least 1, got ${size}`, {
      flag: 'db-pool-size',
    });
  return size;
}

/** `--max-pending-starts`: at least 1 (default one million, far above any burst the auctioneer places in a minute). */
function maxPendingStarts(values: OptionValues): number {
  const bound = intOption(values, 'max-pending-starts') ?? 1_000_000;
  if (bound < 1)
    throw new InvalidArgumentError(`--max-pending-starts must be at least 1, got ${bound}`, {
      flag: 'max-pending-starts',
    });
  return bound;
}

/** A per-second rate flag: a positive number (fractions allowed: one heartbeat every 2 s is 0.5). */
function positiveRate(values: OptionValues, flag: string, fallback: number): number {
  const text = stringOption(values, flag);
  if (text === undefined) return fallback;
  const rate = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text.trim()) || !Number.isFinite(rate) || rate <= 0)
    throw new InvalidArgumentError(`--${flag} must be a positive number, got "${text}"`, { flag });
  return rate;
}

/** The server's callback settings from its flags; only what was given (the rest keeps defaults). */
export function taskCallbackConfigFromFlags(values: OptionValues): {
  maxAttempts?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  timeoutMs?: number;
} {
  const attempts = intOption(values, 'callback-attempts');
  if (attempts !== undefined && attempts < 1) {
    throw new InvalidArgumentError(`--callback-attempts must be at least 1, got ${attempts}`, {
      flag: 'callback-attempts',
    });
  }
  const duration = (name: string) => {
    const text = stringOption(values, name);
    return text === undefined ? undefined : parseDuration(text, `--${name}`);
  };
  const base = duration('callback-backoff-base');
  const max = duration('callback-backoff-max');
  const timeout = duration('callback-timeout');
  return {
    ...(attempts !== undefined ? { maxAttempts: attempts } : {}),
    ...(base !== undefined ? { backoffBaseMs: base } : {}),
    ...(max !== undefined ? { backoffMaxMs: max } : {}),
    ...(timeout !== undefined ? { timeoutMs: timeout } : {}),
  };
}
