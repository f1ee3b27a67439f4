import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SecretBox, secretKeyFileName } from '../../model/index.js';
import { type Principal, type Role, roleAllows, roles } from './roles.js';

/**
 * The distribution spec's token flow (docs/auth.md), as docker, containerd, podman and skopeo
 * speak it: a 401 under `/v2/` carries `WWW-Authenticate: Bearer realm="<server>/v2/token",
 * service="berth",scope="repository:NAME:pull,push"`; `GET /v2/token?service=&scope=` with the
 * user's Basic credentials (any user name, an API token as password) answers a short-lived token
 * for the repositories and actions asked for that the token's role allows (viewers pull only), and
 * that token then authorizes `Authorization: Bearer` on those repositories alone.
 *
 * Tokens are stateless: `brt1.<claims>.<HMAC-SHA256>`. The HMAC key is derived from the data
 * dir's secret key (`secrets.key`, created once, the key that also seals system secrets), so a
 * token outlives a restart of the server that issued it, and every server given the same key
 * file (as servers of one PostgreSQL need anyway to open each other's sealed secrets) accepts it.
 * Without a data dir (in-process tests) the key is per process.
 */
export type RegistryAction = 'pull' | 'push' | 'delete';

export interface RegistryGrant {
  /** A repository name, or `*` for the catalog. */
  readonly name: string;
  readonly actions: readonly RegistryAction[];
}

export interface RegistryTokenClaims {
  readonly principal: Principal;
  readonly access: readonly RegistryGrant[];
  /** Expiry, epoch milliseconds. */
  readonly exp: number;
}

export interface IssuedRegistryToken {
  readonly token: string;
  readonly access_token: string;
  readonly expires_in: number;
  readonly issued_at: string;
}

export const registryTokenService = 'berth';
const tokenPrefix = 'brt1.';

/** What a role may do to a repository: viewers read, operators also write and delete. */
const actionRole: Readonly<Record<RegistryAction, Role>> = {
  pull: 'viewer',
  push: 'operator',
  delete: 'operator',
};

/**
 * `repository:NAME:ACTIONS` scopes (one per `scope` parameter, or several separated by spaces, as
 * docker sends them); `*` asks for every action. Other resource types (`registry:catalog:*`) and
 * unknown actions are dropped: the token simply does not grant them.
 */
export function parseScopes(scopes: readonly string[]): RegistryGrant[] {
  const grants: RegistryGrant[] = [];
  for (const scope of scopes.flatMap((s) => s.split(' ')).filter((s) => s !== '')) {
    const first = scope.indexOf(':');
    const last = scope.lastIndexOf(':');
    if (first === -1 || last === first || scope.slice(0, first) !== 'repository') continue;
    const name = scope.slice(first + 1, last);
    const asked = scope.slice(last + 1).split(',');
    const actions = (['pull', 'push', 'delete'] as const).filter(
      (a) => asked.includes(a) || asked.includes('*'),
    );
    if (name !== '' && actions.length > 0) grants.push({ name, actions });
  }
  return grants;
}

/** The part of `asked` a role allows (a viewer asking `pull,push` gets `pull`). */
export function allowedGrants(role: Role, asked: readonly RegistryGrant[]): RegistryGrant[] {
  return asked
    .map((g) => ({ name: g.name, actions: g.actions.filter((a) => roleAllows(role, actionRole[a])) }))
    .filter((g) => g.actions.length > 0);
}

export function grantsCover(grants: readonly RegistryGrant[], name: string, action: RegistryAction): boolean {
  return grants.some((g) => g.name === name && g.actions.includes(action));
}

function sign(key: Buffer, payload: string): string {
  return createHmac('sha256', key).update(payload).digest('base64url');
}

export class RegistryTokens {
  readonly #key: Buffer;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(options: { readonly key?: Buffer; readonly ttlMs?: number; readonly now?: () => number } = {}) {
    this.#key = options.key ?? randomBytes(32);
    this.#ttlMs = options.ttlMs ?? 5 * 60 * 1000;
    this.#now = options.now ?? Date.now;
  }

  /** Tokens signed with a key derived from `dataDir`'s secret key (created there if missing). */
  static forDataDir(dataDir: string, options: { readonly ttlMs?: number; readonly now?: () => number } = {}) {
    SecretBox.forDataDir(dataDir);
    const secret = readFileSync(join(dataDir, secretKeyFileName));
    // Its own key from the shared secret: a token's HMAC never uses the secrets' keys themselves.
    const key = Buffer.from(hkdfSync('sha256', secret, '', 'berth registry token', 32));
    return new RegistryTokens({ ...options, key });
  }

  static isRegistryToken(token: string): boolean {
    return token.startsWith(tokenPrefix);
  }

  /** A token for what `principal`'s role allows of `scopes`; an empty grant still proves login. */
  issue(principal: Principal, scopes: readonly string[]): IssuedRegistryToken {
    const now = this.#now();
    const claims: RegistryTokenClaims = {
      principal,
      access: allowedGrants(principal.role, parseScopes(scopes)),
      exp: now + this.#ttlMs,
    };
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    const token = `${tokenPrefix}${payload}.${sign(this.#key, payload)}`;
    return {
      token,
      access_token: token,
      expires_in: Math.floor(this.#ttlMs / 1000),
      issued_at: new Date(now).toISOString(),
    };
  }

  /** The claims of a token this server signed and that has not expired; undefined otherwise. */
  verify(token: string): RegistryTokenClaims | undefined {
    if (!RegistryTokens.isRegistryToken(token)) return undefined;
    const [payload = '', signature = ''] = token.slice(tokenPrefix.length).split('.');
    const expected = Buffer.from(sign(this.#key, payload));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let claims: RegistryTokenClaims;
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as RegistryTokenClaims;
    } catch {
      // catch-all: a payload we signed is JSON; if one ever is not, it authorizes nothing
      return undefined;
    }
    if (typeof claims.exp !== 'number' || claims.exp <= this.#now()) return undefined;
    if (!roles.includes(claims.principal?.role)) return undefined;
    return claims;
  }
}

/** What a registry request needs: the repository its path names and the action its method is. */
export function registryAccessOf(
  method: string,
  path: string,
  query: Readonly<Record<string, unknown>>,
): { name: string; action: RegistryAction; from?: string } | undefined {
  const match = /^\/v2\/(.+?)\/(?:manifests|blobs|tags|referrers)\//.exec(path);
  if (match?.[1] === undefined) return undefined;
  const action: RegistryAction =
    method === 'GET' || method === 'HEAD' ? 'pull' : method === 'DELETE' ? 'delete' : 'push';
  // A cross-repository mount also reads the repository it mounts from.
  const from = typeof query.from === 'string' && typeof query.mount === 'string' ? query.from : undefined;
  return { name: match[1], action, ...(from !== undefined ? { from } : {}) };
}

/**
 * The challenge of a 401 under `/v2/`: where to get a token (this server, as the client reached
 * it) and for which scopes; `insufficient_scope` when a token was sent but does not cover them.
 */
export function bearerChallenge(request: FastifyRequest, insufficient = false): string {
  const path = request.url.split('?')[0] ?? '';
  const access = registryAccessOf(request.method, path, (request.query ?? {}) as Record<string, unknown>);
  // A mount also reads its source: both scopes, space-separated in one parameter, as the
  // reference registry (distribution) sends them, so a client asks for one token covering both.
  const scopes =
    access === undefined
      ? []
      : [
          `repository:${access.name}:${access.action === 'pull' ? 'pull' : `pull,${access.action}`}`,
          ...(access.from === undefined || access.from === access.name
            ? []
            : [`repository:${access.from}:pull`]),
        ];
  const scope = scopes.length === 0 ? '' : `,scope="${scopes.join(' ')}"`;
  const realm = `${request.protocol}://${request.host}/v2/token`;
  return `Bearer realm="${realm}",service="${registryTokenService}"${scope}${insufficient ? ',error="insufficient_scope"' : ''}`;
}

/** Whether a request authorized by registry token `grants` may do what its path and method ask. */
export function registryTokenAllows(request: FastifyRequest, grants: readonly RegistryGrant[]): boolean {
  const path = request.url.split('?')[0] ?? '';
  const access = registryAccessOf(request.method, path, (request.query ?? {}) as Record<string, unknown>);
  // `/v2/` (the login check) and `/v2/_catalog` name no repository: any valid token may ask.
  if (access === undefined) return true;
  if (!grantsCover(grants, access.name, access.action)) return false;
  return access.from === undefined || grantsCover(grants, access.from, 'pull');
}

/**
 * `GET /v2/token`: the token endpoint. The auth hook has already authenticated the caller's
 * Basic (or Bearer) API token; this answers the registry token for the scopes asked for.
 */
export function registerRegistryTokenRoute(app: FastifyInstance, tokens: RegistryTokens): void {
  app.get('/v2/token', { schema: { hide: true } }, async (request, reply) => {
    const principal = request.principal;
    if (principal === undefined) {
      return reply
        .code(401)
        .send({ errors: [{ code: 'UNAUTHORIZED', message: 'credentials are required' }] });
    }
    const query = request.query as Record<string, string | string[] | undefined>;
    const scopes = query.scope === undefined ? [] : Array.isArray(query.scope) ? query.scope : [query.scope];
    return reply.header('cache-control', 'no-store').send(tokens.issue(principal, scopes));
  });
}
