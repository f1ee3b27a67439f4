import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bbsOperationPaths } from '../../bbs/index.js';
import {
  bearerChallenge,
  type RegistryGrant,
  RegistryTokens,
  registerRegistryTokenRoute,
  registryTokenAllows,
} from './registry-token-auth.js';
import { type Principal, type Role, roleAllows } from './roles.js';
import type { TokenAuthenticator } from './token-store.js';

/** `auth` of buildApp: tokens (what `berth server` runs) or none (in-process tests). */
export type AppAuth = 'none' | TokenAuthenticator;

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller, when auth is on; undefined with `auth: 'none'`. */
    principal?: Principal;
    /** What a registry token (the distribution token flow) allows, when one authorized the request. */
    registryGrants?: readonly RegistryGrant[];
  }
  interface FastifyContextConfig {
    /** The least role a route needs; by default GET needs viewer and everything else operator. */
    minRole?: Role;
  }
}

/**
 * Always open: load balancers and Prometheus carry no tokens, and `/` only redirects to the console.
 */
const openPaths: ReadonlySet<string> = new Set(['/healthz', '/metrics', '/']);

/** The console's page, script and stylesheet: static, its data comes with the user's token. */
function isConsolePage(method: string, path: string): boolean {
  return (method === 'GET' || method === 'HEAD') && (path === '/console' || path.startsWith('/console/'));
}

/** The BBS's RPC-style internal routes are all POST; the ones that only read are for viewers too. */
const readOnlyPosts: ReadonlySet<string> = new Set(
  Object.entries(bbsOperationPaths)
    .filter(([name]) => /^(get|list|read|count|head)[A-Z]/.test(name))
    .map(([, path]) => path),
);

/**
 * Viewers read what runs but not the secrets it runs with: env values in every answer are
 * redacted for them (src/core/env-redaction.ts). Without auth there is no role and nothing is.
 */
export function redactsEnv(request: FastifyRequest): boolean {
  return request.principal?.role === 'viewer';
}

/** How a request's token is checked again later, for the requests that hold a stream open. */
const reauthentication = new WeakMap<FastifyRequest, () => Promise<boolean>>();

/**
 * Whether the token a request came with is still valid (not revoked, not expired); true when
 * auth is off. A long-lived stream (the event stream) asks this now and then and ends when it is
 * not, so a revoked or expired token stops seeing the cluster and the client is sent to sign in.
 */
export function stillAuthorized(request: FastifyRequest): Promise<boolean> {
  return reauthentication.get(request)?.() ?? Promise.resolve(true);
}

/** The user a request acts as: its token's user, or "anonymous" when auth is off. */
export function userOf(request: FastifyRequest): string {
  return request.principal?.user ?? 'anonymous';
}

export function requiredRole(method: string, path: string, configured: Role | undefined): Role {
  if (configured) return configured;
  if (method === 'GET' || method === 'HEAD') return 'viewer';
  return readOnlyPosts.has(path) ? 'viewer' : 'operator';
}

/** The OCI registry's routes, where clients speak the distribution spec's auth, not ours. */
function isRegistryPath(path: string): boolean {
  return path === '/v2' || path.startsWith('/v2/');
}

/**
 * The token in `Authorization`: `Bearer TOKEN`, or — for registry clients after `podman login` /
 * `skopeo login` / `docker login` with any user name and the token as password — `Basic
 * base64(user:TOKEN)`. Undefined when absent or malformed.
 */
function tokenOf(header: string | undefined, basicAllowed: boolean): string | undefined {
  if (!header) return undefined;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer) return bearer[1];
  const basic = basicAllowed ? /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header) : null;
  if (!basic) return undefined;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const password = colon === -1 ? '' : decoded.slice(colon + 1);
  return password || undefined;
}

/** A refusal in the body the caller's protocol expects: the API's JSON error, or the registry's. */
function refuse(
  request: FastifyRequest,
  reply: FastifyReply,
  registry: boolean,
  status: 401 | 403,
  message: string,
  details: Record<string, unknown> = {},
  insufficientScope = false,
): FastifyReply {
  if (!registry)
    return reply
      .code(status)
      .send({ code: status === 401 ? 'unauthenticated' : 'forbidden', message, details });
  // The distribution spec: 401 carries a challenge, so registry clients know where to get a token
  // (Basic with the API token as password is still accepted on every request).
  if (status === 401) reply.header('www-authenticate', bearerChallenge(request, insufficientScope));
  return reply
    .code(status)
    .header('docker-distribution-api-version', 'registry/2.0')
    .send({ errors: [{ code: status === 401 ? 'UNAUTHORIZED' : 'DENIED', message, detail: details }] });
}

/**
 * Every request but `/healthz` and `/metrics` needs `Authorization: Bearer TOKEN` (the registry's
 * `/v2/` also takes the token as a Basic password, or a registry token from `GET /v2/token`,
 * src/api/auth/registry-token-auth.ts): none or an unknown one is 401, a role too small for the
 * route is 403 (viewers cannot mutate), in the API's JSON error body or, under `/v2/`, the
 * distribution spec's with a `WWW-Authenticate: Bearer` challenge naming the token endpoint.
 */
export function installAuth(
  app: FastifyInstance,
  auth: TokenAuthenticator,
  registryTokens: RegistryTokens = new RegistryTokens(),
): void {
  app.decorateRequest('principal', undefined);
  app.decorateRequest('registryGrants', undefined);
  registerRegistryTokenRoute(app, registryTokens);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '';
    if (openPaths.has(path) || isConsolePage(request.method, path)) return;
    const registry = isRegistryPath(path);
    const header = request.headers.authorization;
    const token = tokenOf(header, registry);
    let principal: Principal | undefined;
    let grants: readonly RegistryGrant[] | undefined;
    if (token !== undefined && registry && RegistryTokens.isRegistryToken(token)) {
      const claims = registryTokens.verify(token);
      if (claims === undefined) return refuse(request, reply, true, 401, 'Invalid or expired registry token');
      principal = claims.principal;
      grants = claims.access;
    } else if (token === undefined) {
      return refuse(
        request,
        reply,
        registry,
        401,
        header
          ? `Malformed Authorization header: expected "Bearer TOKEN"${registry ? ' or Basic with the token as password' : ''}`
          : 'Missing bearer token: send "Authorization: Bearer TOKEN" (berth token create, or <data dir>/admin.token)',
      );
    } else {
      principal = await auth.authenticate(token);
      if (!principal) return refuse(request, reply, registry, 401, 'Invalid or revoked token');
      reauthentication.set(request, async () => (await auth.authenticate(token)) !== undefined);
    }
    request.principal = principal;
    const needed = requiredRole(request.method, path, request.routeOptions.config?.minRole);
    if (!roleAllows(principal.role, needed)) {
      return refuse(
        request,
        reply,
        registry,
        403,
        `Cannot ${request.method} ${path}: role ${principal.role} is not allowed, ${needed} or above is required`,
        { role: principal.role, required: needed },
      );
    }
    // The role allows it; a registry token must also have been asked for this repository and
    // action, else the client asks the token endpoint again for the scope the challenge names.
    if (grants !== undefined) {
      request.registryGrants = grants;
      if (!registryTokenAllows(request, grants)) {
        const message = 'The registry token does not cover this repository and action';
        return refuse(request, reply, true, 401, message, {}, true);
      }
    }
  });
}
