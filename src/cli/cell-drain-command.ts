import { bbsPublicOperations } from '../bbs/index.js';
import type { CommandHandler } from './command.js';
import { serverClient } from './server-client.js';

const drain: CommandHandler = {
  name: 'cell drain',
  async run(ctx) {
    const cellId = ctx.positionals[0] ?? '';
    // Through the server, which forwards it to the rep's evacuate: it alone holds the rep's
    // token (issue 17).
    await serverClient(ctx).call(bbsPublicOperations.evacuateCell, { params: { cell_id: cellId } });
    ctx.stdout.write(`${cellId} evacuating\n`);
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [drain];
