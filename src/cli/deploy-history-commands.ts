import { type DeployRecord, deployHistoryOperations as ops } from '../model/index.js';
import { booleanOption, type CommandHandler, formatOption } from './command.js';
import { serverClient } from './server-client.js';
import { waitForAction } from './system-commands.js';
import { renderTable } from './table-output.js';

/** The largest page the server hands out; past it, the command says where the rest starts. */
const pageLimit = 1000;

function outcome(d: DeployRecord): string {
  return d.reason ? `${d.state}: ${d.reason.split('\n')[0]}` : d.state;
}

const deploys: CommandHandler = {
  name: 'deploys',
  async run(ctx) {
    const format = formatOption(ctx, ['table', 'json']);
    const { deploys: list, next_cursor } = await serverClient(ctx).call(ops.listDeploys, {
      params: { name: ctx.positionals[0] ?? '' },
      query: { limit: pageLimit },
    });
    if (next_cursor !== undefined)
      ctx.stderr.write(`(the first ${pageLimit} actions; the next page starts at cursor ${next_cursor})\n`);
    if (format === 'json') {
      ctx.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
      return 0;
    }
    const rows = list.map((d) => [
      d.id,
      d.rollback_of ? `rollback of ${d.rollback_of}` : d.kind,
      d.path,
      d.digest ? d.digest.slice(0, 12) : '-',
      d.user || '-',
      d.created_at,
      outcome(d),
    ]);
    ctx.stdout.write(
      renderTable(
        ['ID', 'ACTION', 'PATH', 'DIGEST', 'USER', 'CREATED', 'OUTCOME'],
        rows,
        !booleanOption(ctx.values, 'no-legend'),
      ),
    );
    return 0;
  },
};

const rollback: CommandHandler = {
  name: 'rollback',
  async run(ctx) {
    const client = serverClient(ctx);
    const deploy = ctx.positionals[1];
    const action = await client.call(ops.rollback, {
      params: { name: ctx.positionals[0] ?? '' },
      body: deploy !== undefined ? { deploy } : {},
    });
    ctx.stdout.write(`${action.id}\n`);
    return booleanOption(ctx.values, 'wait') ? waitForAction(client, action, ctx) : 0;
  },
};

export const commands: readonly CommandHandler[] = [deploys, rollback];
