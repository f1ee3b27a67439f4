import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { InvalidArgumentError } from '../core/index.js';
import { dataDir, type OptionValues, stringOption } from './command.js';

/** `berth server`'s default listen address (src/cli/server-command.ts), as a URL. */
export const defaultBerthServerUrl = 'http://127.0.0.1:8889';

/** Where a command sends its requests, and with which bearer token. */
export interface ServerTarget {
  /** The first server: for what talks to one server only (the image registry). */
  readonly url: string;
  /** Every server given (`--server A,B`): the HTTP client moves to the next when one dies. */
  readonly urls: readonly string[];
  readonly token: string | undefined;
}

/**
 * The one rule every CLI command follows to find its server and token (issue 18):
 * the server is the flag (`--server`; `--bbs` for `berth cell`), else $BERTH_SERVER, else the
 * local default; the token is `--token`, else $BERTH_TOKEN, else `<data dir>/admin.token` — that
 * last one ONLY for a server on this machine (a loopback address), since the local `berth server`
 * minted it: a local admin token is never sent to a remote server unless the user passes it.
 * Several servers (`A,B,C`, issue 20) serve one cluster; each entry must be a URL, and the local
 * token goes only when every one of them is on this machine.
 */
export function resolveServerTarget(
  values: OptionValues,
  options: { readonly urlFlag?: string; readonly env?: NodeJS.ProcessEnv } = {},
): ServerTarget {
  const env = options.env ?? process.env;
  const flag = options.urlFlag ?? 'server';
  const given = stringOption(values, flag) ?? (env.BERTH_SERVER || defaultBerthServerUrl);
  const entries = given.split(',').map((entry) => entry.trim().replace(/\/+$/, ''));
  const hosts = entries.map((entry) => {
    let parsed: URL;
    try {
      parsed = new URL(entry);
    } catch {
      throw invalidServer(flag, given, entry);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw invalidServer(flag, given, entry);
    return parsed.hostname;
  });
  const explicit = stringOption(values, 'token') ?? (env.BERTH_TOKEN?.trim() || undefined);
  return {
    url: entries[0]!,
    urls: entries,
    token: explicit ?? (hosts.every(isLoopbackHost) ? localAdminToken(dataDir(values)) : undefined),
  };
}

function invalidServer(flag: string, given: string, entry: string): InvalidArgumentError {
  const which = given === entry ? '' : ` (its entry "${entry}")`;
  return new InvalidArgumentError(
    `Invalid --${flag} "${given}"${which}: expected http://HOST:PORT, or several separated by commas`,
    { flag, entry },
  );
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
