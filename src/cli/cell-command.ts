import { hostname } from 'node:os';
import { BbsClient, TaskOutputClient } from '../bbs/index.js';
import { InvalidArgumentError, parseDuration } from '../core/index.js';
import { HistoryClient } from '../history/index.js';
import { CellAgent, httpCellAgentTransport } from '../model/index.js';
import { pullingImageResolver } from '../registry/index.js';
import { defaultCrashPolicy, serverRelations, startCell } from '../rep/index.js';
import { openImageStore } from '../runtime/image/index.js';
import { parseLogSizeMax } from '../runtime/index.js';
import { fingerprintCapacity, readMachineTotals } from './capacity-fingerprint.js';
import { type CommandContext, type CommandHandler, dataDir, intOption, stringOption } from './command.js';
import { failoverImageResolver } from './failover-image-resolver.js';
import { resolveServerTarget } from './server-target.js';

function positiveInt(ctx: CommandContext, name: string, fallback: number): number {
  return optionalPositiveInt(ctx, name) ?? fallback;
}

/** A flag of at least 1, or undefined when not given. */
export function optionalPositiveInt(ctx: CommandContext, name: string): number | undefined {
  const value = intOption(ctx.values, name);
  if (value !== undefined && value < 1)
    throw new InvalidArgumentError(`--${name} must be at least 1, got ${value}`, { flag: name });
  return value;
}

function durationOption(ctx: CommandContext, name: string, fallback: string): number {
  return parseDuration(stringOption(ctx.values, name) ?? fallback, `--${name}`);
}

const cell: CommandHandler = {
  name: 'cell',
  async run(ctx) {
    const dir = dataDir(ctx.values);
    // The one rule (server-target.ts): a local admin.token only for a server on this machine.
    // Several servers (`--bbs A,B,C`): every client below moves to the next when its server dies.
    const { urls: bbsUrls, token } = resolveServerTarget(ctx.values, { urlFlag: 'bbs' });
    const bbs = new BbsClient(bbsUrls, token ? { token } : {});
    const portsText = stringOption(ctx.values, 'ports') ?? '61000-61999';
    const portMatch = /^(\d+)-(\d+)$/.exec(portsText);
    if (!portMatch || Number(portMatch[1]) > Number(portMatch[2])) {
      throw new InvalidArgumentError(`Invalid --ports "${portsText}": expected FROM-TO`, { flag: 'ports' });
    }
    const logSizeText = stringOption(ctx.values, 'log-size-max');
    const logSizeMax = logSizeText === undefined ? undefined : parseLogSizeMax(logSizeText);
    const maxConcurrentStarts = optionalPositiveInt(ctx, 'max-concurrent-starts');
    const store = openImageStore(dir);
    const history = new HistoryClient(bbsUrls, token ? { token } : {});
    const cellId = stringOption(ctx.values, 'id') ?? hostname();
    const log = (message: string) => ctx.stderr.write(`berth cell ${cellId}: ${message}\n`);
    const running = await startCell({
      bbs,
      cellId,
      zone: stringOption(ctx.values, 'zone') ?? 'z1',
      dataDir: dir,
      // The machine's real memory and free disk unless the flags say otherwise (as Nomad fingerprints).
      capacity: {
        ...fingerprintCapacity(readMachineTotals(dir), {
          memory_mb: optionalPositiveInt(ctx, 'memory'),
          disk_mb: optionalPositiveInt(ctx, 'disk'),
        }),
        containers: positiveInt(ctx, 'containers', 100),
      },
      images: failoverImageResolver(
        bbsUrls.map((serverUrl) => pullingImageResolver({ store, serverUrl, ...(token ? { token } : {}) })),
      ),
      listen: stringOption(ctx.values, 'listen') ?? '127.0.0.1:0',
      address: stringOption(ctx.values, 'address') ?? '127.0.0.1',
      placementTags: (stringOption(ctx.values, 'tags') ?? '').split(',').filter(Boolean),
      optionalPlacementTags: (stringOption(ctx.values, 'optional-tags') ?? '').split(',').filter(Boolean),
      relations: serverRelations(bbsUrls, cellId, token),
      modelAgent: new CellAgent({
        cellId,
        transport: httpCellAgentTransport(bbsUrls, cellId, token),
        log,
      }),
      pollIntervalMs: durationOption(ctx, 'poll-interval', '5s'),
      presenceTtlMs: durationOption(ctx, 'presence-ttl', '30s'),
      evacuationTimeoutMs: durationOption(ctx, 'evacuation-timeout', '10m'),
      crashPolicy: {
        ...defaultCrashPolicy,
        baseMs: durationOption(ctx, 'crash-backoff-base', '30s'),
        maxMs: durationOption(ctx, 'crash-backoff-max', '16m'),
      },
      portRange: { from: Number(portMatch[1]), to: Number(portMatch[2]) },
      ...(logSizeMax !== undefined ? { logSizeMax } : {}),
      ...(maxConcurrentStarts !== undefined ? { maxConcurrentStarts } : {}),
      log,
      taskOutputs: new TaskOutputClient(bbsUrls, token ? { token } : {}),
      postHistory: async (batch) => {
        await history.ingest(batch);
      },
    });
    // The first stdout line is the rep URL, so scripts and tests can find a port-0 cell.
    ctx.stdout.write(`${running.url}\n`);
    await new Promise<void>((resolve) => {
      // SIGTERM evacuates before exit (issue 4); SIGINT too, as an operator's ^C expects.
      const drain = () => {
        process.off('SIGTERM', drain);
        process.off('SIGINT', drain);
        void running.drain().then(resolve, (err: unknown) => {
          log(`evacuation failed: ${String(err)}`);
          resolve();
        });
      };
      process.on('SIGTERM', drain);
      process.on('SIGINT', drain);
      running.rep.onEvacuated(() => {
        process.off('SIGTERM', drain);
        process.off('SIGINT', drain);
        void running.close().then(resolve);
      });
    });
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [cell];
