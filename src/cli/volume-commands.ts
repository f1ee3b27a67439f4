import { PodStore, VolumeStore } from '../runtime/index.js';
import { booleanOption, type CommandContext, type CommandHandler, dataDir, formatOption } from './command.js';
import { renderTable } from './table-output.js';

function openVolumes(ctx: CommandContext): VolumeStore {
  const dir = dataDir(ctx.values);
  return new VolumeStore(dir, new PodStore(dir));
}

const create: CommandHandler = {
  name: 'volume create',
  async run(ctx) {
    ctx.stdout.write(`${openVolumes(ctx).create(ctx.positionals[0] ?? '').name}\n`);
    return 0;
  },
};

const list: CommandHandler = {
  name: 'volume list',
  async run(ctx) {
    const volumes = openVolumes(ctx)
      .list()
      .sort((a, b) => a.name.localeCompare(b.name));
    if (formatOption(ctx, ['table', 'json']) === 'json') {
      ctx.stdout.write(`${JSON.stringify(volumes, null, 2)}\n`);
      return 0;
    }
    ctx.stdout.write(
      renderTable(
        ['NAME', 'CREATED', 'MOUNTPOINT'],
        volumes.map((v) => [v.name, v.created, v.mountpoint]),
        !booleanOption(ctx.values, 'no-legend'),
      ),
    );
    return 0;
  },
};

const inspect: CommandHandler = {
  name: 'volume inspect',
  async run(ctx) {
    const store = openVolumes(ctx);
    const name = ctx.positionals[0] ?? '';
    ctx.stdout.write(`${JSON.stringify({ ...store.inspect(name), pods: store.users(name) }, null, 2)}\n`);
    return 0;
  },
};

const rm: CommandHandler = {
  name: 'volume rm',
  async run(ctx) {
    const store = openVolumes(ctx);
    let failed = 0;
    for (const name of ctx.positionals) {
      try {
        await store.remove(name);
        ctx.stdout.write(`${name}\n`);
      } catch (err) {
        failed++;
        ctx.stderr.write(`berth: ${err instanceof Error ? err.message : String(err)}\n`);
      }
    }
    return failed === 0 ? 0 : 1;
  },
};

export const commands: readonly CommandHandler[] = [create, list, inspect, rm];
