import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { BerthError, InvalidArgumentError } from '../core/index.js';

export interface RegistryCredentials {
  readonly username: string;
  readonly password: string;
}

/** `USER:PASS` of `--creds` (podman's and skopeo's flag), split at the first colon. */
export function parseCreds(text: string): RegistryCredentials {
  const colon = text.indexOf(':');
  if (colon <= 0) {
    throw new InvalidArgumentError('Invalid --creds: expected USER:PASSWORD', { flag: 'creds' });
  }
  return { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

/**
 * The auth files podman, skopeo and docker write, in the order containers/image reads them:
 * $REGISTRY_AUTH_FILE, ${XDG_RUNTIME_DIR}/containers/auth.json, ~/.config/containers/auth.json,
 * then docker's ~/.docker/config.json.
 */
export function authFileCandidates(env: NodeJS.ProcessEnv = process.env, home = homedir()): string[] {
  const files: string[] = [];
  if (env.REGISTRY_AUTH_FILE) files.push(env.REGISTRY_AUTH_FILE);
  if (env.XDG_RUNTIME_DIR) files.push(join(env.XDG_RUNTIME_DIR, 'containers', 'auth.json'));
  files.push(join(env.XDG_CONFIG_HOME || join(home, '.config'), 'containers', 'auth.json'));
  files.push(join(env.DOCKER_CONFIG || join(home, '.docker'), 'config.json'));
  return files;
}

interface AuthFile {
  readonly auths?: Record<
    string,
    { readonly auth?: string; readonly username?: string; readonly password?: string }
  >;
}

/** The host part of an auth.json key: `https://index.docker.io/v1/` and `host/repo` alike. */
function keyHost(key: string): string {
  return key.replace(/^https?:\/\//, '').split('/')[0] ?? key;
}

function decodeAuth(entry: NonNullable<AuthFile['auths']>[string]): RegistryCredentials | undefined {
  if (entry.auth) {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (entry.username && entry.password !== undefined) {
    return { username: entry.username, password: entry.password };
  }
  return undefined;
}

/**
 * The credentials an auth file holds for `host` and `repository`: the most specific key wins
 * (`host/ns/repo` over `host/ns` over `host`), as containers-auth.json(5) says. Docker Hub's
 * aliases share one entry.
 */
export function credentialsFromAuthFile(
  path: string,
  host: string,
  repository: string,
): RegistryCredentials | undefined {
  if (!existsSync(path)) return undefined;
  let parsed: AuthFile;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8')) as AuthFile;
  } catch (err) {
    throw new BerthError(
      'invalid_argument',
      `The auth file ${path} is not valid JSON`,
      { path },
      { cause: err },
    );
  }
  const auths = parsed.auths ?? {};
  const hub = host === 'registry-1.docker.io';
  const matches = Object.keys(auths).filter((key) => {
    const bare = key.replace(/^https?:\/\//, '').replace(/\/v1\/?$/, '');
    const keyRegistry = keyHost(key);
    const sameHost = keyRegistry === host || (hub && /(^|\.)docker\.io$/.test(keyRegistry));
    if (!sameHost) return false;
    const path = bare.slice(keyRegistry.length + 1);
    return path === '' || repository === path || repository.startsWith(`${path}/`);
  });
  matches.sort((a, b) => b.length - a.length);
  for (const key of matches) {
    const entry = auths[key];
    const creds = entry === undefined ? undefined : decodeAuth(entry);
    if (creds !== undefined) return creds;
  }
  return undefined;
}

/** `--creds` if given, else the first auth file that has an entry for the registry. */
export function findCredentials(
  host: string,
  repository: string,
  options: { readonly creds?: string; readonly authFile?: string; readonly env?: NodeJS.ProcessEnv } = {},
): RegistryCredentials | undefined {
  if (options.creds !== undefined) return parseCreds(options.creds);
  const files = options.authFile !== undefined ? [options.authFile] : authFileCandidates(options.env);
  for (const file of files) {
    const creds = credentialsFromAuthFile(file, host, repository);
    if (creds !== undefined) return creds;
  }
  return undefined;
}
