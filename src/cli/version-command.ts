import { readFileSync } from 'node:fs';
import type { CommandSpec } from './command.js';

const version: CommandSpec = {
  name: 'version',
  summary: 'Print the berth version.',
  usage: 'berth version',
  async run(ctx) {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    ctx.stdout.write(`berth ${pkg.version}\n`);
    return 0;
  },
};

export const commands: readonly CommandSpec[] = [version];
