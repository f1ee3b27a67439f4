import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, type ErrorCode, httpStatusByCode, InvalidArgumentError } from '../core/index.js';
import { type CommandContext, dataDir, stringOption } from './command.js';

/** `berth server`'s default listen address (src/cli/server-command.ts), as a URL. */
export const defaultBerthServerUrl = 'http://127.0.0.1:8889';

/** Flags of every command that talks to a server. */
export const serverFlags = {
  server: { type: 'string' },
  token: { type: 'string' },
} as const;

export const serverFlagsUsage = '[--server URL] [--token TOKEN]';

/**
 * A small client of the server's public JSON API for the CLI. Not BbsClient: that one speaks the
 * internal component routes; users' commands go through the same public routes as any program.
 */
export class ServerClient {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;

  constructor(baseUrl: string, options: { token?: string; timeoutMs?: number } = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: {
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(this.#token !== undefined ? { authorization: `Bearer ${this.#token}` } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
      throw new BerthError(
        'unavailable',
        `Cannot reach the berth server at ${this.baseUrl}${cause} (is "berth server" running? --server URL or $BERTH_SERVER)`,
        { url: this.baseUrl },
      );
    }
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    if (!response.ok) throw errorFrom(response.status, text);
    return JSON.parse(text) as T;
  }

  /**
   * Every record of a paged list route (`{ [key]: [...], next_cursor? }`, docs/bbs.md), walking
   * its pages at the largest size: the CLI's lists show the whole set, as users expect.
   */
  async listAll<T>(path: string, key: string, pageSize = 1000): Promise<T[]> {
    const records: T[] = [];
    let cursor: string | undefined;
    do {
      const url = new URL(path, 'http://x');
      url.searchParams.set('limit', String(pageSize));
      if (cursor !== undefined) url.searchParams.set('cursor', cursor);
      const page = await this.request<Record<string, unknown>>('GET', `${url.pathname}${url.search}`);
      records.push(...((page[key] as T[] | undefined) ?? []));
      cursor = typeof page.next_cursor === 'string' ? page.next_cursor : undefined;
    } while (cursor !== undefined);
    return records;
  }
}

/**
 * The server named by --server, else $BERTH_SERVER, else the local default; the token is --token,
 * else $BERTH_TOKEN, else — only for a server on this machine — `<data dir>/admin.token`, which the
 * local `berth server` writes (never sent to a remote server it was not minted by).
 */
export function serverClient(ctx: CommandContext): ServerClient {
  const url = stringOption(ctx.values, 'server') ?? process.env.BERTH_SERVER ?? defaultBerthServerUrl;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidArgumentError(`Invalid --server "${url}": expected http://HOST:PORT`, {
      flag: 'server',
    });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InvalidArgumentError(`Invalid --server "${url}": expected http://HOST:PORT`, {
      flag: 'server',
    });
  }
  const token = stringOption(ctx.values, 'token') ?? process.env.BERTH_TOKEN ?? localAdminToken(ctx, parsed);
  return new ServerClient(url, token ? { token } : {});
}

function localAdminToken(ctx: CommandContext, server: URL): string | undefined {
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(server.hostname)) return undefined;
  try {
    return readFileSync(join(dataDir(ctx.values), 'admin.token'), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

function errorFrom(status: number, text: string): BerthError {
  let body: { code?: string; message?: string; details?: Record<string, unknown> } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    body = { message: text || `HTTP ${status}` };
  }
  const code =
    body.code && body.code in httpStatusByCode
      ? (body.code as ErrorCode)
      : ((Object.entries(httpStatusByCode) as [ErrorCode, number][]).find(([, s]) => s === status)?.[0] ??
        'internal');
  return new BerthError(code, body.message ?? `HTTP ${status}`, body.details ?? {});
}
