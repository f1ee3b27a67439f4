import { InvalidArgumentError, parseDuration } from '../core/index.js';
import { HistoryClient } from '../history/index.js';
import {
  booleanOption,
  type CommandContext,
  type CommandHandler,
  formatOption,
  stringOption,
} from './command.js';
import { unreachableHint } from './server-client.js';
import { resolveServerTarget } from './server-target.js';
import { renderTable } from './table-output.js';

/** The history API's client, at the server and with the token of the one rule (server-target.ts). */
function client(ctx: CommandContext): HistoryClient {
  const { urls, token } = resolveServerTarget(ctx.values);
  return new HistoryClient(urls, { token, unreachableHint });
}

function json(ctx: CommandContext, value: unknown): number {
  ctx.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  return 0;
}

const history: CommandHandler = {
  name: 'history',
  async run(ctx) {
    const c = await client(ctx).getContainer(ctx.positionals[0]!);
    if (formatOption(ctx, ['table', 'json']) === 'json') return json(ctx, c);
    ctx.stdout.write(
      `${c.id}  ${c.image} ${c.command.join(' ')}\nstatus ${c.status} since ${c.status_time}  cell ${c.cell_id || '-'}  owner ${c.owner_kind} ${c.owner_id || '-'}${c.system ? `  system ${c.system}` : ''}${c.exit_code !== null ? `  exit ${c.exit_code}` : ''}\n\n`,
    );
    ctx.stdout.write(
      renderTable(
        ['RECORDED', 'EXTERNAL', 'STATUS', 'EXIT', 'BY', 'MESSAGE'],
        c.history.map((h) => [
          h.time_recorded,
          h.external_timestamp ?? '-',
          h.status,
          h.exit_code === null ? '' : String(h.exit_code),
          h.entity_id ? `${h.entity_type}:${h.entity_id}` : h.entity_type,
          h.message ?? '',
        ]),
      ),
    );
    return 0;
  },
};

const ps: CommandHandler = {
  name: 'ps',
  async run(ctx) {
    const format = formatOption(ctx, ['table', 'json']);
    const c = client(ctx);
    const filter = {
      ...(stringOption(ctx.values, 'status') !== undefined
        ? { status: stringOption(ctx.values, 'status')! }
        : {}),
      ...(stringOption(ctx.values, 'system') !== undefined
        ? { system: stringOption(ctx.values, 'system')! }
        : {}),
      ...(stringOption(ctx.values, 'since') !== undefined
        ? { since: stringOption(ctx.values, 'since')! }
        : {}),
    };
    const limitText = stringOption(ctx.values, 'limit');
    const limit = limitText === undefined ? Number.POSITIVE_INFINITY : Number(limitText);
    if (!(limit > 0))
      throw new InvalidArgumentError(`--limit must be a positive integer, got "${limitText}"`);
    const all = [];
    let cursor: string | undefined;
    do {
      const page = await c.listContainers({
        ...filter,
        limit: Math.min(500, limit - all.length),
        ...(cursor ? { cursor } : {}),
      });
      all.push(...page.containers);
      cursor = page.next_cursor;
    } while (cursor && all.length < limit);
    if (format === 'json') return json(ctx, all);
    ctx.stdout.write(
      renderTable(
        ['CONTAINER', 'IMAGE', 'STATUS', 'SINCE', 'CELL', 'OWNER'],
        all.map((x) => [
          x.id,
          x.image || '-',
          x.status,
          x.status_time,
          x.cell_id || '-',
          `${x.owner_kind}:${x.owner_id || '-'}`,
        ]),
      ),
    );
    return 0;
  },
};

const events: CommandHandler = {
  name: 'events',
  async run(ctx) {
    const controller = new AbortController();
    const stop = () => controller.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    const follow = booleanOption(ctx.values, 'follow');
    // Without --follow: print what is there, then stop after a quiet moment.
    let idle: NodeJS.Timeout | undefined;
    const arm = () => {
      if (follow) return;
      clearTimeout(idle);
      idle = setTimeout(stop, 500);
    };
    arm();
    try {
      const after = stringOption(ctx.values, 'after');
      for await (const e of client(ctx).streamContainerEvents({
        signal: controller.signal,
        ...(after ? { after } : {}),
      })) {
        ctx.stdout.write(`${JSON.stringify(e)}\n`);
        arm();
      }
    } finally {
      clearTimeout(idle);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
    return 0;
  },
};

const subscribe: CommandHandler = {
  name: 'subscribe',
  async run(ctx) {
    const statuses = (stringOption(ctx.values, 'status') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    const sub = await client(ctx).subscribe(ctx.positionals[0]!, statuses);
    ctx.stdout.write(`${sub.id}\n`);
    return 0;
  },
};

const tokenCreate: CommandHandler = {
  name: 'token create',
  async run(ctx) {
    const role = stringOption(ctx.values, 'role');
    if (role === undefined)
      throw new InvalidArgumentError('berth token create needs --role admin|operator|viewer');
    const name = stringOption(ctx.values, 'name');
    const ttl = stringOption(ctx.values, 'ttl');
    const ttlMs = ttl === undefined ? undefined : parseDuration(ttl, '--ttl');
    if (ttlMs !== undefined && ttlMs < 1000)
      throw new InvalidArgumentError(`Invalid --ttl ${ttl}: a token must last at least 1s`, { field: 'ttl' });
    const created = await client(ctx).createToken(
      role,
      name,
      ttlMs === undefined ? undefined : Math.ceil(ttlMs / 1000),
    );
    ctx.stdout.write(`${created.token}\n`);
    ctx.stderr.write(
      `token ${created.id} for user "${created.name}" with role ${created.role}${created.expires_at ? `, expires ${created.expires_at}` : ''}\n`,
    );
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [history, ps, events, subscribe, tokenCreate];
