import { readFileSync } from 'node:fs';
import { type HttpJsonClient, InvalidArgumentError, parseDuration, sleep } from '../core/index.js';
import { type ActionRecord, isLiveAction, systemOperations as ops } from '../model/index.js';
import { progressLine, progressWithBar } from './action-progress.js';
import {
  booleanOption,
  type CommandContext,
  type CommandHandler,
  formatOption,
  stringOption,
} from './command.js';
import { definitionWithSecretFiles } from './secret-files.js';
import { serverClient } from './server-client.js';

/**
 * Polls the action until it ends, showing its progress: on a TTY one line redrawn with a bar,
 * otherwise a plain line each time the progress changes. Exit 0 when it succeeded, 1 (its reason
 * on stderr) when it failed.
 */
export async function waitForAction(
  client: HttpJsonClient,
  action: ActionRecord,
  ctx: CommandContext,
): Promise<number> {
  const tty = (ctx.stdout as { isTTY?: boolean }).isTTY === true;
  let current: Awaited<ReturnType<typeof getAction>> = action;
  let shown = '';
  const getAction = () => client.call(ops.getAction, { params: { id: action.id } });
  while (isLiveAction(current.state)) {
    await sleep(500);
    current = await getAction();
    if (!current.progress) continue;
    const line = tty ? progressWithBar(current.progress) : progressLine(current.progress);
    if (line === shown) continue;
    shown = line;
    ctx.stdout.write(tty ? `\r\x1b[K${line}` : `${line}\n`);
  }
  if (tty && shown !== '') ctx.stdout.write('\n');
  if (current.state === 'succeeded') {
    ctx.stdout.write(`${current.kind} ${current.id} succeeded\n`);
    return 0;
  }
  ctx.stderr.write(`berth: ${current.kind} ${current.id} failed: ${current.reason}\n`);
  return 1;
}

/** `--timeout DUR` as the API's milliseconds (a string: query values are strings). */
function timeoutQuery(ctx: CommandContext): { timeout_ms?: string } {
  const text = stringOption(ctx.values, 'timeout');
  return text === undefined ? {} : { timeout_ms: String(parseDuration(text, '--timeout')) };
}

const deploy: CommandHandler = {
  name: 'deploy',
  async run(ctx) {
    const file = ctx.positionals[0]!;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new InvalidArgumentError(`Cannot read ${file}: ${(err as Error).message}`, { file });
    }
    const path = stringOption(ctx.values, 'path');
    const client = serverClient(ctx);
    const action = await client.call(ops.deploy, {
      query: timeoutQuery(ctx),
      body: { definition: definitionWithSecretFiles(text, file), ...(path !== undefined ? { path } : {}) },
    });
    ctx.stdout.write(`${action.id}\n`);
    return booleanOption(ctx.values, 'wait') ? waitForAction(client, action, ctx) : 0;
  },
};

const teardown: CommandHandler = {
  name: 'teardown',
  async run(ctx) {
    const client = serverClient(ctx);
    const action = await client.call(ops.teardown, {
      params: { name: ctx.positionals[0] ?? '' },
      query: {
        ...timeoutQuery(ctx),
        ...(booleanOption(ctx.values, 'force') ? { force: 'true' as const } : {}),
      },
    });
    ctx.stdout.write(`${action.id}\n`);
    return booleanOption(ctx.values, 'wait') ? waitForAction(client, action, ctx) : 0;
  },
};

const systemList: CommandHandler = {
  name: 'system list',
  async run(ctx) {
    const format = formatOption(ctx, ['table', 'json']);
    const { systems, next_cursor } = await serverClient(ctx).call(ops.listSystems, {
      query: { limit: 1000 },
    });
    // The largest page; past it, say where the rest is rather than walk an unbounded list.
    if (next_cursor !== undefined)
      ctx.stderr.write(`(the first 1000 systems; the next page starts at cursor ${next_cursor})\n`);
    if (format === 'json') {
      ctx.stdout.write(`${JSON.stringify(systems, null, 2)}\n`);
      return 0;
    }
    const width = Math.max(6, ...systems.map((s) => s.name.length));
    ctx.stdout.write(`${'SYSTEM'.padEnd(width)}  STATE\n`);
    for (const s of systems)
      ctx.stdout.write(`${s.name.padEnd(width)}  ${s.state}${s.reason ? ` (${s.reason})` : ''}\n`);
    return 0;
  },
};

const systemStatus: CommandHandler = {
  name: 'system status',
  async run(ctx) {
    const format = formatOption(ctx, ['text', 'json']);
    const status = await serverClient(ctx).call(ops.getSystem, {
      params: { name: ctx.positionals[0] ?? '' },
    });
    if (format === 'json') {
      ctx.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
      return 0;
    }
    const out = ctx.stdout;
    out.write(`system ${status.name}: ${status.state}${status.reason ? ` (${status.reason})` : ''}\n`);
    for (const a of status.actions) out.write(`  ${a.kind} ${a.id} of ${a.path} ${a.state}\n`);
    for (const s of status.services) {
      out.write(
        `  ${s.path}  ${s.kind}  ${s.state}${s.reason ? ` (${s.reason})` : ''}  ${s.life}${s.sidecar_of ? `  sidecar of ${s.sidecar_of}` : ''}\n`,
      );
      for (const u of s.units) {
        out.write(
          `    #${u.index}  ${u.life}  ${u.state}  ${u.cell_id ?? '-'}${u.principal ? `  principal ${u.principal}` : ''}\n`,
        );
      }
    }
    for (const r of status.relations)
      out.write(
        `  ${r.endpoints.join(' <-> ')}  ${r.kind}  ${r.life}  scope: ${r.scope.join(', ') || '-'}\n`,
      );
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [deploy, teardown, systemList, systemStatus];
