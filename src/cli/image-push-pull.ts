import { InvalidArgumentError, parseDuration } from '../core/index.js';
import { booleanOption, type CommandContext, type CommandHandler, dataDir, stringOption } from './command.js';
import { resolveServerTarget } from './server-target.js';

/** The registry's server and token, by the one rule every command follows (server-target.ts). */
function registryTarget(ctx: CommandContext): { serverUrl: string; token?: string } {
  const { url, token } = resolveServerTarget(ctx.values);
  return { serverUrl: url, ...(token !== undefined ? { token } : {}) };
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
    const { RegistryClient, pushImage } = await import('../registry/index.js');
    const { openImageStore } = await import('../runtime/image/index.js');
    const ref = imageArg(ctx);
    const target = registryTarget(ctx);
    const url = target.serverUrl;
    const store = openImageStore(dataDir(ctx.values));
    const result = await pushImage(
      store,
      new RegistryClient(target),
      ref,
      stringOption(ctx.values, 'as') ?? ref,
    );
    if (!booleanOption(ctx.values, 'quiet')) {
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
    const { RegistryClient, pullImage } = await import('../registry/index.js');
    const { openImageStore } = await import('../runtime/image/index.js');
    const target = registryTarget(ctx);
    const url = target.serverUrl;
    const store = openImageStore(dataDir(ctx.values));
    const result = await pullImage(store, new RegistryClient(target), imageArg(ctx));
    if (!booleanOption(ctx.values, 'quiet')) {
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
