import { InvalidArgumentError, parseDuration } from '../core/index.js';
import type { PullSourceOptions } from '../registry/index.js';
import { booleanOption, type CommandContext, type CommandHandler, dataDir, stringOption } from './command.js';
import { resolveServerTarget } from './server-target.js';
import { ttyTransferProgress } from './transfer-progress.js';

/**
 * Where an image comes from or goes to: the berth server and its token by the one rule every
 * command follows (server-target.ts) for names without a registry host; the registry named, with
 * `--creds`/`--authfile`/`--insecure`, for the others.
 */
function registryTarget(ctx: CommandContext, ref: string): PullSourceOptions {
  const { url, token } = resolveServerTarget(ctx.values);
  const creds = stringOption(ctx.values, 'creds');
  const authFile = stringOption(ctx.values, 'authfile');
  const insecure = booleanOption(ctx.values, 'insecure') ? [insecureHost(ref)] : [];
  return {
    serverUrl: url,
    ...(token !== undefined ? { token } : {}),
    ...(creds !== undefined ? { creds } : {}),
    ...(authFile !== undefined ? { authFile } : {}),
    insecure,
  };
}

/** `--insecure` applies to the registry the reference names. */
function insecureHost(ref: string): string {
  const first = ref.split('/')[0] ?? '';
  return ref.includes('/') ? first : '';
}

function imageArg(ctx: CommandContext): string {
  const value = ctx.positionals[0];
  if (value === undefined || value === '') throw new InvalidArgumentError('NAME[:TAG] is required');
  return value;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

const pushCommand: CommandHandler = {
  name: 'image push',
  async run(ctx) {
    const { pullSource, pushImage } = await import('../registry/index.js');
    const { openImageStore } = await import('../runtime/image/index.js');
    const ref = imageArg(ctx);
    const remote = stringOption(ctx.values, 'as') ?? ref;
    const { client, reference, url } = pullSource(remote, registryTarget(ctx, remote));
    if (reference.digest !== undefined) {
      throw new InvalidArgumentError('push under NAME:TAG, not a digest (the registry answers the digest)');
    }
    const store = openImageStore(dataDir(ctx.values));
    const bar = ttyTransferProgress(ctx.stderr, 'pushed', Date.now);
    const quiet = booleanOption(ctx.values, 'quiet');
    const result = await pushImage(store, client, ref, reference, quiet ? {} : bar.progress).finally(
      bar.finish,
    );
    if (!quiet) {
      ctx.stderr.write(
        `Pushed ${result.name} to ${url}: ${result.blobsCopied} blobs (${mib(result.bytesCopied)}) sent, ${result.blobsSkipped} already there\n`,
      );
    }
    ctx.stdout.write(`${result.manifestDigest}\n`);
    return 0;
  },
};

const pullCommand: CommandHandler = {
  name: 'image pull',
  async run(ctx) {
    const { parsePlatform, pullImage, pullSource } = await import('../registry/index.js');
    const { openImageStore } = await import('../runtime/image/index.js');
    const ref = imageArg(ctx);
    const { client, reference, url } = pullSource(ref, registryTarget(ctx, ref));
    const platform = stringOption(ctx.values, 'platform');
    const store = openImageStore(dataDir(ctx.values));
    const quiet = booleanOption(ctx.values, 'quiet');
    const bar = ttyTransferProgress(ctx.stderr, 'pulled', Date.now);
    const result = await pullImage(store, client, reference, {
      ...(quiet ? {} : bar.progress),
      ...(platform !== undefined ? { platform: parsePlatform(platform) } : {}),
    }).finally(bar.finish);
    if (!quiet) {
      ctx.stderr.write(
        `Pulled ${result.name} (${result.manifestDigest}) from ${url}: ${result.blobsCopied} blobs (${mib(result.bytesCopied)}) fetched, ${result.blobsSkipped} already here\n`,
      );
    }
    ctx.stdout.write(`${result.image.id}\n`);
    return 0;
  },
};

const pruneCommand: CommandHandler = {
  name: 'image prune',
  async run(ctx) {
    const { openImageStore } = await import('../runtime/image/index.js');
    const { sweepUploads } = await import('../registry/index.js');
    const grace = stringOption(ctx.values, 'grace');
    const graceMs = grace === undefined ? 60 * 60 * 1000 : parseDuration(grace, '--grace');
    const store = openImageStore(dataDir(ctx.values));
    const uploads = await sweepUploads(store, graceMs);
    const result = await store.gc({ pendingGraceMs: graceMs });
    if (!result.ran) {
      ctx.stderr.write('berth: an import or removal is under way; nothing pruned (try again)\n');
      return 4;
    }
    ctx.stdout.write(
      `Deleted ${result.blobsRemoved} blobs (${mib(result.bytesRemoved ?? 0)}), ${result.rootfsRemoved} rootfs dirs, ${result.tmpRemoved + uploads} stale temp files and uploads; kept ${result.pendingKept ?? 0} pending blobs and ${result.rootfsInUse ?? 0} rootfs dirs in use by pods\n`,
    );
    return 0;
  },
};

export const registryCommands: readonly CommandHandler[] = [pushCommand, pullCommand, pruneCommand];
