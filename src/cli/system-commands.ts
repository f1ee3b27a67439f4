import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, type ErrorCode, httpStatusByCode, InvalidArgumentError } from '../core/index.js';
import type { ActionRecord, SystemStatusJson } from '../model/index.js';
import { booleanOption, type CommandContext, type CommandSpec, dataDir, stringOption } from './command.js';

/** `berth server`'s default listen address (server-command.ts), as a URL. */
const defaultServer = 'http://127.0.0.1:8889';
const serverOptions = { server: { type: 'string' }, token: { type: 'string' } } as const;
const serverUsage = '[--server URL] [--token TOKEN]';

interface Api {
  request<T>(method: string, path: string, body?: unknown): Promise<T>;
}

/**
 * The server: --server, else $BERTH_SERVER, else the local default. The token: --token, else
 * $BERTH_TOKEN, else (a server on this machine only) `<data dir>/admin.token`.
 */
function api(ctx: CommandContext): Api {
  const base = (stringOption(ctx.values, 'server') ?? process.env.BERTH_SERVER ?? defaultServer).replace(
    /\/+$/,
    '',
  );
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new InvalidArgumentError(`Invalid --server "${base}": expected http://HOST:PORT`, {
      flag: 'server',
    });
  }
  let token = stringOption(ctx.values, 'token') ?? process.env.BERTH_TOKEN;
  if (token === undefined && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
    try {
      token = readFileSync(join(dataDir(ctx.values), 'admin.token'), 'utf8').trim() || undefined;
    } catch {
      token = undefined;
    }
  }
  return {
    async request<T>(method: string, path: string, body?: unknown): Promise<T> {
      let response: Response;
      try {
        response = await fetch(`${base}${path}`, {
          method,
          headers: {
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(30_000),
        });
      } catch (err) {
        const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
        throw new BerthError(
          'unavailable',
          `Cannot reach the berth server at ${base}${cause} (is "berth server" running? --server URL or $BERTH_SERVER)`,
          { url: base },
        );
      }
      const text = await response.text();
      if (!response.ok) {
        let parsed: { code?: string; message?: string; details?: Record<string, unknown> } = {};
        try {
          parsed = JSON.parse(text) as typeof parsed;
        } catch {
          parsed = { message: text || `HTTP ${response.status}` };
        }
        const code = parsed.code && parsed.code in httpStatusByCode ? (parsed.code as ErrorCode) : 'internal';
        throw new BerthError(code, parsed.message ?? `HTTP ${response.status}`, parsed.details ?? {});
      }
      return JSON.parse(text) as T;
    },
  };
}

/** Polls the action until it ends; exit 0 when it succeeded, 1 when it failed. */
async function waitFor(client: Api, action: ActionRecord, ctx: CommandContext): Promise<number> {
  let current = action;
  while (current.state === 'running') {
    await new Promise((resolve) => setTimeout(resolve, 300));
    current = await client.request<ActionRecord>('GET', `/v1/deploys/${encodeURIComponent(action.id)}`);
  }
  if (current.state === 'succeeded') {
    ctx.stdout.write(`${current.kind} ${current.id} succeeded\n`);
    return 0;
  }
  ctx.stderr.write(`berth: ${current.kind} ${current.id} failed: ${current.reason}\n`);
  return 1;
}

const deploy: CommandSpec = {
  name: 'deploy',
  summary:
    'Deploy a system definition (YAML): refused with every problem listed, or at once when another action holds a conflicting lock; prints the deploy id.',
  usage: `berth deploy FILE [--path P] [--wait] ${serverUsage}`,
  options: { path: { type: 'string' }, wait: { type: 'boolean' }, ...serverOptions },
  positionals: { min: 1, max: 1, names: 'FILE' },
  async run(ctx) {
    const file = ctx.positionals[0]!;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new InvalidArgumentError(`Cannot read ${file}: ${(err as Error).message}`, { file });
    }
    const path = stringOption(ctx.values, 'path');
    const client = api(ctx);
    const action = await client.request<ActionRecord>('POST', '/v1/deploys', {
      definition: text,
      ...(path !== undefined ? { path } : {}),
    });
    ctx.stdout.write(`${action.id}\n`);
    return booleanOption(ctx.values, 'wait') ? waitFor(client, action, ctx) : 0;
  },
};

const teardown: CommandSpec = {
  name: 'teardown',
  summary: 'Tear a system down (exclusive on /: fails at once while any deploy runs); prints the action id.',
  usage: `berth teardown SYSTEM [--wait] ${serverUsage}`,
  options: { wait: { type: 'boolean' }, ...serverOptions },
  positionals: { min: 1, max: 1, names: 'SYSTEM' },
  async run(ctx) {
    const client = api(ctx);
    const action = await client.request<ActionRecord>(
      'POST',
      `/v1/systems/${encodeURIComponent(ctx.positionals[0]!)}/teardown`,
    );
    ctx.stdout.write(`${action.id}\n`);
    return booleanOption(ctx.values, 'wait') ? waitFor(client, action, ctx) : 0;
  },
};

const systemList: CommandSpec = {
  name: 'system list',
  summary: 'List systems and their states.',
  usage: `berth system list [--format json] ${serverUsage}`,
  options: { format: { type: 'string' }, ...serverOptions },
  async run(ctx) {
    const { systems, next_cursor } = await api(ctx).request<{
      systems: { name: string; state: string; reason?: string }[];
      next_cursor?: string;
    }>('GET', '/v1/systems?limit=1000');
    // The largest page; past it, say where the rest is rather than walk an unbounded list.
    if (next_cursor !== undefined)
      ctx.stderr.write(`(the first 1000 systems; more: GET /v1/systems?cursor=${next_cursor})\n`);
    if (stringOption(ctx.values, 'format') === 'json') {
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

const systemStatus: CommandSpec = {
  name: 'system status',
  summary: "A system's state, its services with their units and cells, and its relations.",
  usage: `berth system status SYSTEM [--format json] ${serverUsage}`,
  options: { format: { type: 'string' }, ...serverOptions },
  positionals: { min: 1, max: 1, names: 'SYSTEM' },
  async run(ctx) {
    const format = stringOption(ctx.values, 'format') ?? 'text';
    if (format !== 'text' && format !== 'json')
      throw new InvalidArgumentError(`--format must be text or json, got "${format}"`, { flag: 'format' });
    const status = await api(ctx).request<SystemStatusJson>(
      'GET',
      `/v1/systems/${encodeURIComponent(ctx.positionals[0]!)}`,
    );
    if (format === 'json') {
      ctx.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
      return 0;
    }
    const out = ctx.stdout;
    out.write(`system ${status.name}: ${status.state}${status.reason ? ` (${status.reason})` : ''}\n`);
    for (const a of status.actions) out.write(`  ${a.kind} ${a.id} of ${a.path} running\n`);
    for (const s of status.services) {
      out.write(
        `  ${s.path}  ${s.kind}  ${s.state}  ${s.life}${s.sidecar_of ? `  sidecar of ${s.sidecar_of}` : ''}\n`,
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

export const commands: readonly CommandSpec[] = [deploy, teardown, systemList, systemStatus];
