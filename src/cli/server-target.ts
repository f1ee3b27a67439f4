import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { InvalidArgumentError } from '../core/index.js';
import { dataDir, type OptionValues, stringOption } from './command.js';

/** `berth server`'s default listen address (src/cli/server-command.ts), as a URL. */
export const defaultBerthServerUrl = 'http://127.0.0.1:8889';

/** Where a command sends its requests, and with which bearer token. */
export interface ServerTarget {
  readonly url: string;
  readonly token: string | undefined;
}

/**
 * The one rule every CLI command follows to find its server and token (issue 18):
 * the server is the flag (`--server`; `--bbs` for `berth cell`), else $BERTH_SERVER, else the
 * local default; the token is `--token`, else $BERTH_TOKEN, else `<data dir>/admin.token` — that
 * last one ONLY for a server on this machine (a loopback address), since the local `berth server`
 * minted it: a local admin token is never sent to a remote server unless the user passes it.
 */
export function resolveServerTarget(
  values: OptionValues,
  options: { readonly urlFlag?: string; readonly env?: NodeJS.ProcessEnv } = {},
): ServerTarget {
  const env = options.env ?? process.env;
  const flag = options.urlFlag ?? 'server';
  const url = (stringOption(values, flag) ?? (env.BERTH_SERVER || defaultBerthServerUrl)).replace(/\/+$/, '');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidServer(flag, url);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw invalidServer(flag, url);
  const explicit = stringOption(values, 'token') ?? (env.BERTH_TOKEN?.trim() || undefined);
  return {
    url,
    token: explicit ?? (isLoopbackHost(parsed.hostname) ? localAdminToken(dataDir(values)) : undefined),
  };
}

function invalidServer(flag: string, url: string): InvalidArgumentError {
  return new InvalidArgumentError(`Invalid --${flag} "${url}": expected http://HOST:PORT`, { flag });
}

/** `localhost`, 127.0.0.0/8 and ::1: addresses that cannot leave this machine. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1';
  return false;
}

/** The admin token the local `berth server` wrote on its first start, if any. */
function localAdminToken(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, 'admin.token'), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
