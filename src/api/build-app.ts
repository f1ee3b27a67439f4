import swagger from '@fastify/swagger';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import {
  type BerthError,
  httpStatusByCode,
  installRequestGuards,
  isBerthError,
  isUnchangedRequest,
  limits,
  redactEnv,
} from '../core/index.js';
import { type AdmissionOptions, installAdmissionControl } from './admission-control.js';
import { ApiMetrics } from './api-metrics.js';
import { type AppAuth, installAuth, redactsEnv } from './auth/auth-hook.js';
import type { RegistryTokens } from './auth/registry-token-auth.js';
import type { RouteDeps, RouteModule } from './route-module.js';
import { serverRoutes } from './server-routes.js';

/**
 * The app shell's settings (logger, auth) and the route modules' deps (src/api/route-module.ts);
 * metrics default to a fresh registry, private callback targets to refused.
 */
export interface AppDeps
  extends Omit<RouteDeps, 'metrics' | 'allowPrivateCallbacks'>,
    Partial<Pick<RouteDeps, 'metrics' | 'allowPrivateCallbacks'>> {
  /** A pino logger (the server's), or false for none (tests). */
  readonly logger?: FastifyBaseLogger | false;
  /**
   * Bearer-token auth (src/api/auth/auth-hook.ts): a token verifier, or 'none' — the default here, so
   * in-process tests need no tokens; `berth server` (startBbsServer) turns tokens on.
   */
  readonly auth?: AppAuth;
  /** Signs the registry's distribution tokens (default: a key of this process). */
  readonly registryTokens?: RegistryTokens;
  /** The route modules to serve (default: all of src/api/server-routes.ts). */
  readonly routes?: readonly RouteModule[];
  /** Back-pressure on creates while too many starts wait (src/api/admission-control.ts); absent: none. */
  readonly admission?: AdmissionOptions;
}

/**
 * Builds the whole HTTP API without listening (Hono's and fastify's `inject` style): tests call it
 * in-process, and only `berth server` listens.
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    // fastify's two lines per request (received, completed) cost ~8 % of a busy server's CPU, most
    // of it for the reads cells repeat every poll: one line per request is written below instead.
    disableRequestLogging: true,
    // SSE streams and keep-alive clients must not hold a graceful shutdown open.
    forceCloseConnections: true,
    bodyLimit: limits.maxBodyBytes,
    // find-my-way's default (100) made a guid the API accepted (up to 255) unreachable by path:
    // room for the longest name percent-encoded; the schemas then bound the decoded value.
    routerOptions: { maxParamLength: 3 * limits.maxNameLength },
    // A path that is not valid percent-encoded UTF-8: the same 400 shape as every other error.
    frameworkErrors: (error, _request, reply) => {
      const body: ErrorBody = {
        code: 'invalid_argument',
        message: error.message,
        details: { fastify_code: error.code },
      };
      (reply as { code(status: number): { send(body: unknown): unknown } }).code(400).send(body);
    },
    ajv: {
      customOptions: {
        // "3" is not a number and an unknown field is a typo: both are 400s, never coerced/dropped.
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
        allErrors: false,
      },
    },
  });
  // Before any route: the hooks then guard every route, including later layers' plugins.
  installRequestGuards(app);
  if (deps.auth !== undefined && deps.auth !== 'none') installAuth(app, deps.auth, deps.registryTokens);
  if (deps.admission) installAdmissionControl(app, deps.admission);
  // One place for every route's JSON answer: a viewer sees env names, not values (docs/auth.md).
  app.addHook('preSerialization', async (request, _reply, payload) =>
    redactsEnv(request) ? redactEnv(payload) : payload,
  );
  const metrics = deps.metrics ?? new ApiMetrics();
  metrics.observeStore(deps.store);

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    metrics.latency.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    logRequest(request, reply);
  });

  app.setErrorHandler((err: FastifyError | BerthError | Error, request, reply) => {
    const body = toErrorBody(err);
    const status = httpStatusByCode[body.code];
    if (status >= 500) request.log.error({ err }, 'request failed');
    return reply.code(status).send(body);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({
      code: 'not_found',
      message: `No route ${request.method} ${request.url.split('?')[0]}`,
      details: { method: request.method, url: request.url },
    }),
  );

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'berth BBS API',
        description: 'The cluster state store of berth: DesiredLRPs, ActualLRPs, tasks, cells, events.',
        version: '1',
      },
    },
  });
  const { logger: _logger, auth: _auth, admission: _admission, routes = serverRoutes, ...parts } = deps;
  const routeDeps = { ...parts, metrics, allowPrivateCallbacks: deps.allowPrivateCallbacks === true };
  for (const module of routes) await module.register(app, routeDeps);
  return app;
}

type ErrorBody = { code: BerthError['code']; message: string; details: Record<string, unknown> };

function toErrorBody(err: FastifyError | Error): ErrorBody {
  if (isBerthError(err)) return { code: err.code, message: err.message, details: { ...err.details } };
  const fastifyError = err as FastifyError;
  if (fastifyError.validation && fastifyError.validation.length > 0) {
    // A union that matched no branch: name the union's field, not a branch's inner property.
    const first =
      fastifyError.validation.find((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf') ??
      fastifyError.validation[0]!;
    const params = first.params as { missingProperty?: string; additionalProperty?: string; limit?: unknown };
    const path = first.instancePath.replace(/^\//, '').replace(/\//g, '.');
    const field =
      (params.missingProperty ?? params.additionalProperty)
        ? [path, params.missingProperty ?? params.additionalProperty].filter(Boolean).join('.')
        : path || fastifyError.validationContext || 'body';
    const where = fastifyError.validationContext ?? 'body';
    const reason = params.additionalProperty ? 'is not a known field' : (first.message ?? 'is invalid');
    return {
      code: 'invalid_argument',
      message: `Invalid ${where}: ${field} ${reason}`,
      // The bound a value broke (maximum, maxLength, maxItems…): clients may show or clamp to it.
      details: {
        field,
        location: where,
        ...(typeof params.limit === 'number' ? { limit: params.limit } : {}),
      },
    };
  }
  const status = fastifyError.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    // Malformed JSON, wrong content type, body too large: the client's fault, said plainly.
    return { code: 'invalid_argument', message: err.message, details: { fastify_code: fastifyError.code } };
  }
  return { code: 'internal', message: err.message, details: {} };
}

/**
 * One log line per request: writes and failures at info, successful reads (the polls of every
 * cell, router and console, GETs or internal operations that change nothing) at debug, so a busy
 * cluster's log says what changed, not who looked.
 */
function logRequest(request: FastifyRequest, reply: FastifyReply): void {
  const level = reply.statusCode < 400 && isUnchangedRequest(request) ? 'debug' : 'info';
  request.log[level](
    {
      method: request.method,
      url: request.url,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
    },
    'request',
  );
}
