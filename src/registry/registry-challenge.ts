import { BerthError, describeFetchError } from '../core/index.js';
import type { RegistryCredentials } from './registry-credentials.js';

/** A parsed `WWW-Authenticate` challenge: its scheme and its auth-params (realm, service, scope). */
export interface AuthChallenge {
  readonly scheme: string;
  readonly params: Readonly<Record<string, string>>;
}

/**
 * Parses `Bearer realm="https://auth.example/token",service="registry",scope="repository:a:pull"`
 * (RFC 7235 auth-params, quoted or token values). Only the first challenge is read: registries
 * send one.
 */
export function parseChallenge(header: string): AuthChallenge | undefined {
  const match = /^\s*([A-Za-z][\w-]*)\s*(.*)$/s.exec(header);
  if (match === null) return undefined;
  const params: Record<string, string> = {};
  const paramPattern = /([A-Za-z][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))\s*,?\s*/g;
  for (const p of (match[2] ?? '').matchAll(paramPattern)) {
    const key = p[1]?.toLowerCase();
    if (key !== undefined) params[key] = (p[2] ?? p[3] ?? '').replace(/\\(.)/g, '$1');
  }
  return { scheme: (match[1] ?? '').toLowerCase(), params };
}

/** `repository:NAME:pull` widened to the actions this client needs (`pull,push` for a push). */
export function scopeFor(repository: string, actions: readonly string[]): string {
  return `repository:${repository}:${actions.join(',')}`;
}

function unauthenticated(message: string, details: Record<string, unknown>, cause?: unknown): BerthError {
  return new BerthError('unauthenticated', message, details, cause === undefined ? undefined : { cause });
}

function basic(credentials: RegistryCredentials): string {
  return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
}

/**
 * Answers a registry's 401 the way docker, containerd and skopeo do: Basic with the user's
 * credentials for a Basic challenge; for a Bearer challenge, a GET of the realm with `service` and
 * `scope` (Basic credentials when there are any, anonymous otherwise) whose `token` (or
 * `access_token`) authorizes the retried request. Returns the `Authorization` value to send.
 */
export async function answerChallenge(
  challenge: AuthChallenge,
  credentials: RegistryCredentials | undefined,
  scope: string | undefined,
  registry: string,
): Promise<string> {
  if (challenge.scheme === 'basic') {
    if (credentials === undefined) {
      throw unauthenticated(
        `${registry} asks for a user name and password: give --creds USER:PASS or log in with podman login`,
        {
          registry,
        },
      );
    }
    return basic(credentials);
  }
  if (challenge.scheme !== 'bearer' || challenge.params.realm === undefined) {
    throw unauthenticated(`${registry} asks for an unsupported authentication scheme "${challenge.scheme}"`, {
      registry,
    });
  }
  const realm = new URL(challenge.params.realm);
  if (challenge.params.service !== undefined) realm.searchParams.set('service', challenge.params.service);
  const wanted = scope ?? challenge.params.scope;
  if (wanted !== undefined) realm.searchParams.set('scope', wanted);
  let response: Response;
  try {
    response = await fetch(realm, {
      headers: credentials === undefined ? {} : { authorization: basic(credentials) },
    });
  } catch (err) {
    throw new BerthError(
      'unavailable',
      `Cannot reach the token service ${realm.origin} of ${registry}: ${describeFetchError(err)}`,
      { registry, realm: realm.href },
      { cause: err },
    );
  }
  if (!response.ok) {
    const text = (await response.text()).slice(0, 300);
    throw unauthenticated(
      `The token service of ${registry} refused ${credentials === undefined ? 'an anonymous' : `${credentials.username}'s`} request for "${wanted ?? ''}" with ${response.status}${text ? `: ${text}` : ''}`,
      { registry, status: response.status },
    );
  }
  const body = (await response.json()) as { token?: string; access_token?: string };
  const token = body.token ?? body.access_token;
  if (typeof token !== 'string' || token === '') {
    throw unauthenticated(`The token service of ${registry} answered without a token`, { registry });
  }
  return `Bearer ${token}`;
}
