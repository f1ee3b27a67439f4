import { readFileSync } from 'node:fs';
import type { CommandHandler } from './command.js';

const version: CommandHandler = {
  name: 'version',
  async run(ctx) {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    ctx.stdout.write(`berth ${pkg.version}\n`);
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [version];
