import { InvalidArgumentError, parseDuration } from '../core/index.js';
import { readCliToken } from './cli-token.js';
import { booleanOption, type CommandContext, type CommandSpec, dataDir, stringOption } from './command.js';

const serverHelp =
  'the berth server (registry) URL: --server, else $BERTH_SERVER, else http://127.0.0.1:8889';

async function serverUrl(ctx: CommandContext): Promise<string> {
  const { defaultServerUrl } = await import('../registry/index.js');
  const url = stringOption(ctx.values, 'server') ?? process.env.BERTH_SERVER ?? defaultServerUrl;
  if (!/^https?:\/\/[^/]+/.test(url)) {
    throw new InvalidArgumentError(`Invalid --server "${url}": expected http://HOST:PORT`, {
      flag: 'server',
    });
  }
  return url;
}

/** The bearer token: --token, else what every CLI command sends ($BERTH_TOKEN, <dir>/admin.token). */
function token(ctx: CommandContext): { token?: string } {
  const value = stringOption(ctx.values, 'token') ?? readCliToken(dataDir(ctx.values));
  return value === undefined || value === '' ? {} : { token: value };
}

function imageArg(ctx: CommandContext): string {
  const value = ctx.positionals[0];
  if (value === undefined || value === '') throw new InvalidArgumentError('NAME[:TAG] is required');
  return value;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

const pushCommand: CommandSpec = {
  name: 'image push',
  summary: `Push a local image to a berth server's registry (blobs it already has are skipped); prints the manifest digest. Server: ${serverHelp}.`,
  usage: 'berth image push NAME[:TAG] [--as NAME:TAG] [--server URL] [--token TOKEN] [--dir DIR]',
  options: {
    server: { type: 'string' },
    token: { type: 'string' },
    as: { type: 'string' },
    quiet: { type: 'boolean', short: 'q' },
  },
  positionals: { min: 1, max: 1, names: 'NAME[:TAG]' },
  async run(ctx) {
    const { RegistryClient, pushImage } = await import('../registry/index.js');
    const { openImageStore } = await import('../runtime/image/index.js');
    const ref = imageArg(ctx);
    const url = await serverUrl(ctx);
    const store = openImageStore(dataDir(ctx.values));
    const result = await pushImage(
      store,
      new RegistryClient({ serverUrl: url, ...token(ctx) }),
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

const pullCommand: CommandSpec = {
  name: 'image pull',
  summary: `Pull an image from a berth server's registry into the local store, verifying every digest; prints the image id. Server: ${serverHelp}.`,
  usage: 'berth image pull NAME[:TAG] [--server URL] [--token TOKEN] [--dir DIR]',
  options: { server: { type: 'string' }, token: { type: 'string' }, quiet: { type: 'boolean', short: 'q' } },
  positionals: { min: 1, max: 1, names: 'NAME[:TAG]' },
  async run(ctx) {
    const { RegistryClient, pullImage } = await import('../registry/index.js');
    const { openImageStore } = await import('../runtime/image/index.js');
    const url = await serverUrl(ctx);
    const store = openImageStore(dataDir(ctx.values));
    const result = await pullImage(
      store,
      new RegistryClient({ serverUrl: url, ...token(ctx) }),
      imageArg(ctx),
    );
    if (!booleanOption(ctx.values, 'quiet')) {
      ctx.stderr.write(
        `Pulled ${result.name} (${result.manifestDigest}) from ${url}: ${result.blobsCopied} blobs (${mib(result.bytesCopied)}) fetched, ${result.blobsSkipped} already here\n`,
      );
    }
    ctx.stdout.write(`${result.image.id}\n`);
    return 0;
  },
};

const pruneCommand: CommandSpec = {
  name: 'image prune',
  summary:
    'Delete what no image references: unreferenced blobs, rootfs dirs of removed images no live pod uses, debris of killed imports, and registry uploads idle past --grace. Blobs pushed or pulled within --grace (their manifest may still come) are kept.',
  usage: 'berth image prune [--grace 1h] [--dir DIR]',
  options: { grace: { type: 'string' } },
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

export const registryCommands: readonly CommandSpec[] = [pushCommand, pullCommand, pruneCommand];
