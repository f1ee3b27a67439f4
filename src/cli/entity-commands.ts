import { type HttpJsonClient, InvalidArgumentError } from '../core/index.js';
import { type ActionRecord, entityOperations as ops } from '../model/index.js';
import { booleanOption, type CommandContext, type CommandHandler, formatOption } from './command.js';
import { serverClient } from './server-client.js';
import { waitForAction } from './system-commands.js';
import { renderTable } from './table-output.js';

/** `shop/web/api/2` → system `shop`, service `/web/api`, and (with `withIndex`) unit index 2. */
export function parseEntityAddress(
  text: string,
  withIndex: boolean,
): { system: string; path: string; index: number } {
  const parts = text.split('/');
  const index = withIndex ? parts.pop() : '0';
  const [system, ...service] = parts;
  const usage = withIndex ? 'SYSTEM/SERVICE/N, like shop/web/2' : 'SYSTEM/SERVICE, like shop/web';
  if (!system || service.length === 0 || service.some((s) => s === '') || !/^\d{1,7}$/.test(index ?? ''))
    throw new InvalidArgumentError(`Cannot read "${text}": expected ${usage}`, { address: text });
  return { system, path: `/${service.join('/')}`, index: Number(index) };
}

/** `/web` or `web` → `/web`: relation endpoints are service paths. */
function servicePath(text: string): string {
  return text.startsWith('/') ? text : `/${text}`;
}

/** Prints the accepted action (its id, a table row, or JSON), then with --wait follows it to its end. */
async function accepted(ctx: CommandContext, client: HttpJsonClient, action: ActionRecord): Promise<number> {
  const format = formatOption(ctx, ['id', 'table', 'json']);
  if (format === 'json') ctx.stdout.write(`${JSON.stringify(action, null, 2)}\n`);
  else if (format === 'table')
    ctx.stdout.write(
      renderTable(
        ['ACTION', 'KIND', 'SYSTEM', 'TARGET', 'STATE'],
        [[action.id, action.kind, action.system || '-', action.path, action.state]],
      ),
    );
  else ctx.stdout.write(`${action.id}\n`);
  return booleanOption(ctx.values, 'wait') ? waitForAction(client, action, ctx) : 0;
}

function command(
  name: string,
  send: (ctx: CommandContext, client: HttpJsonClient) => Promise<ActionRecord>,
): CommandHandler {
  return {
    name,
    async run(ctx) {
      const client = serverClient(ctx);
      return accepted(ctx, client, await send(ctx, client));
    },
  };
}

const relationEnds = (ctx: CommandContext) => ({
  a: servicePath(ctx.positionals[1] ?? ''),
  b: servicePath(ctx.positionals[2] ?? ''),
});

const force = (ctx: CommandContext) => (booleanOption(ctx.values, 'force') ? { force: true } : {});

export const commands: readonly CommandHandler[] = [
  command('unit destroy', (ctx, client) => {
    const { system, path, index } = parseEntityAddress(ctx.positionals[0] ?? '', true);
    return client.call(ops.destroyUnit, { params: { name: system }, body: { path, index, ...force(ctx) } });
  }),
  command('service scale', (ctx, client) => {
    const { system, path } = parseEntityAddress(ctx.positionals[0] ?? '', false);
    const n = ctx.positionals[1] ?? '';
    if (!/^\d{1,7}$/.test(n))
      throw new InvalidArgumentError(`Cannot scale to "${n}": expected a count like 3`, { n });
    return client.call(ops.scaleService, { params: { name: system }, body: { path, instances: Number(n) } });
  }),
  command('service destroy', (ctx, client) => {
    const { system, path } = parseEntityAddress(ctx.positionals[0] ?? '', false);
    return client.call(ops.destroyService, { params: { name: system }, body: { path, ...force(ctx) } });
  }),
  command('relation add', (ctx, client) =>
    client.call(ops.addRelation, { params: { name: ctx.positionals[0] ?? '' }, body: relationEnds(ctx) }),
  ),
  command('relation remove', (ctx, client) =>
    client.call(ops.removeRelation, { params: { name: ctx.positionals[0] ?? '' }, body: relationEnds(ctx) }),
  ),
  command('cell destroy', (ctx, client) =>
    client.call(ops.destroyCell, { params: { id: ctx.positionals[0] ?? '' }, body: force(ctx) }),
  ),
];
