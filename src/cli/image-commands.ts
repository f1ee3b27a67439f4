import { InvalidArgumentError } from '../core/index.js';
import type { ImageSummary } from '../runtime/image/index.js';
import { booleanOption, type CommandContext, type CommandHandler, dataDir, stringOption } from './command.js';
import { registryCommands } from './image-push-pull.js';
import { renderTable } from './table-output.js';

async function openStore(ctx: CommandContext) {
  const { openImageStore } = await import('../runtime/image/index.js');
  return openImageStore(dataDir(ctx.values));
}

function positional(ctx: CommandContext, what: string): string {
  const value = ctx.positionals[0];
  if (value === undefined || value === '') throw new InvalidArgumentError(`${what} is required`);
  return value;
}

const importCommand: CommandHandler = {
  name: 'image import',
  async run(ctx) {
    const name = stringOption(ctx.values, 'name');
    const store = await openStore(ctx);
    const image = await store.importArchive(
      positional(ctx, 'An archive or layout directory'),
      name === undefined ? {} : { name },
    );
    ctx.stdout.write(`${image.id}\n`);
    return 0;
  },
};

const importRootfsCommand: CommandHandler = {
  name: 'image import-rootfs',
  async run(ctx) {
    const name = stringOption(ctx.values, 'name');
    if (name === undefined) {
      throw new InvalidArgumentError(
        `berth image import-rootfs needs --name NAME:TAG\nUsage: berth image import-rootfs DIR --name NAME:TAG`,
      );
    }
    const store = await openStore(ctx);
    const image = await store.importRootfs(positional(ctx, 'A directory'), name);
    ctx.stdout.write(`${image.id}\n`);
    return 0;
  },
};

function shortId(id: string): string {
  return id.replace(/^sha256:/, '').slice(0, 12);
}

function humanSize(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

function tableRows(images: readonly ImageSummary[]): string[][] {
  return images.flatMap((image) => {
    const names = image.names.length > 0 ? image.names : ['<none>:<none>'];
    return names.map((full) => {
      const colon = full.lastIndexOf(':');
      return [
        full.slice(0, colon),
        full.slice(colon + 1),
        shortId(image.id),
        image.created,
        humanSize(image.size),
      ];
    });
  });
}

const listCommand: CommandHandler = {
  name: 'image list',
  async run(ctx) {
    const format = stringOption(ctx.values, 'format') ?? 'table';
    if (format !== 'table' && format !== 'json') {
      throw new InvalidArgumentError(`Invalid --format "${format}": expected table or json`, {
        flag: 'format',
      });
    }
    const images = (await openStore(ctx)).list();
    if (format === 'json') {
      ctx.stdout.write(`${JSON.stringify(images, null, 2)}\n`);
      return 0;
    }
    ctx.stdout.write(
      renderTable(
        ['REPOSITORY', 'TAG', 'IMAGE ID', 'CREATED', 'SIZE'],
        tableRows(images),
        !booleanOption(ctx.values, 'no-legend'),
      ),
    );
    return 0;
  },
};

const removeCommand: CommandHandler = {
  name: 'image rm',
  async run(ctx) {
    const result = await (await openStore(ctx)).remove(positional(ctx, 'An image name or id'));
    for (const name of result.untagged) ctx.stdout.write(`Untagged: ${name}\n`);
    if (result.deleted !== undefined) ctx.stdout.write(`Deleted: ${result.deleted}\n`);
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [
  importCommand,
  importRootfsCommand,
  listCommand,
  removeCommand,
  ...registryCommands,
];
