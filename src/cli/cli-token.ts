import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The bearer token the CLI sends: `BERTH_TOKEN`, else `<data dir>/admin.token` (written by the
 * server on first start), else undefined (a server with `--auth none` needs none).
 */
export function readCliToken(dataDir: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromEnv = env.BERTH_TOKEN?.trim();
  if (fromEnv) return fromEnv;
  try {
    const text = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    return text === '' ? undefined : text;
  } catch {
    return undefined;
  }
}

/** The server the CLI talks to: `--server`, else `BERTH_SERVER`, else the default listen address. */
export function serverUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return flag ?? env.BERTH_SERVER ?? 'http://127.0.0.1:8889';
}
