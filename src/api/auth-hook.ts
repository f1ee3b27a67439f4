import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bbsOperationPaths } from '../bbs/index.js';
import type { Principal, Role, TokenAuthenticator } from './auth-token-store.js';

/** `auth` of buildApp: tokens (what `berth server` runs) or none (in-process tests). */
export type AppAuth = 'none' | TokenAuthenticator;

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller, when auth is on; undefined with `auth: 'none'`. */
    principal?: Principal;
  }
  interface FastifyContextConfig {
    /** The least role a route needs; by default GET needs viewer and everything else operator. */
    minRole?: Role;
  }
}

const rank: Readonly<Record<Role, number>> = { viewer: 0, operator: 1, admin: 2 };

/**
 * Always open: load balancers and Prometheus carry no tokens, and the dashboard's page and script
 * are static (its API calls carry the user's token).
 */
const openPaths: ReadonlySet<string> = new Set(['/healthz', '/metrics', '/', '/dashboard.js']);

/** The BBS's RPC-style internal routes are all POST; the ones that only read are for viewers too. */
const readOnlyPosts: ReadonlySet<string> = new Set(
  Object.entries(bbsOperationPaths)
    .filter(([name]) => /^(get|list|read|count)[A-Z]/.test(name))
    .map(([, path]) => path),
);

export function requiredRole(method: string, path: string, configured: Role | undefined): Role {
  if (configured) return configured;
  if (method === 'GET' || method === 'HEAD') return 'viewer';
  return readOnlyPosts.has(path) ? 'viewer' : 'operator';
}

/**
 * Every request but `/healthz` and `/metrics` needs `Authorization: Bearer TOKEN`: none or an
 * unknown one is 401, a role too small for the route is 403 (viewers cannot mutate), both as the
 * API's usual JSON error body.
 */
export function installAuth(app: FastifyInstance, auth: TokenAuthenticator): void {
  app.decorateRequest('principal', undefined);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '';
    if (openPaths.has(path)) return;
    const header = request.headers.authorization;
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) {
      return reply.code(401).send({
        code: 'unauthenticated',
        message: header
          ? 'Malformed Authorization header: expected "Bearer TOKEN"'
          : 'Missing bearer token: send "Authorization: Bearer TOKEN" (berth token create, or <data dir>/admin.token)',
        details: {},
      });
    }
    const principal = await auth.authenticate(match[1]!);
    if (!principal) {
      return reply.code(401).send({
        code: 'unauthenticated',
        message: 'Invalid or revoked token',
        details: {},
      });
    }
    request.principal = principal;
    const needed = requiredRole(request.method, path, request.routeOptions.config?.minRole);
    if (rank[principal.role] < rank[needed]) {
      return reply.code(403).send({
        code: 'forbidden',
        message: `Cannot ${request.method} ${path}: role ${principal.role} is not allowed, ${needed} or above is required`,
        details: { role: principal.role, required: needed },
      });
    }
  });
}
