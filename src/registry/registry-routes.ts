import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type BerthError, httpStatusByCode, isBerthError } from '../core/index.js';
import { type ImageStore, openImageStore } from '../runtime/image/index.js';
import { deleteBlob, getBlob, startUpload, upload } from './registry-blob-handlers.js';
import { RegistryError, type RegistryErrorCode } from './registry-errors.js';
import { listCatalog, listReferrers, listTags, unknownRepository } from './registry-listing.js';
import { deleteManifest, getManifest, putManifest } from './registry-manifest-handlers.js';
import { apiVersion, matchRegistryPath, maxNameLength } from './registry-paths.js';
import { UploadSessions } from './upload-sessions.js';

/** What a request needs: `pull` for reads (viewers), `push` for writes (operators). */
export interface RegistryAccess {
  readonly action: 'pull' | 'push';
  /** The repository, or undefined for `/v2/` and `/v2/_catalog`. */
  readonly name?: string;
}

export interface RegistryRoutesOptions {
  /** The data dir whose image store the registry serves (the server's `--dir`). */
  readonly dataDir: string;
  /**
   * The auth seam: runs as the one preHandler of every `/v2/` request. Throw a RegistryError
   * (UNAUTHORIZED with a WWW-Authenticate header, DENIED) or a BerthError with code
   * unauthenticated/forbidden to refuse. Without it the registry is open, like the rest of the API.
   */
  readonly authorize?: (request: FastifyRequest, access: RegistryAccess) => Promise<void>;
  /** Uploads idle longer than this are deleted (default 1 hour). */
  readonly uploadIdleTtlMs?: number;
}

/**
 * The OCI Distribution API v1.1 (pull, push, content discovery, content management) under
 * `/v2/`, backed by the node's image store: pushed manifests are kept byte for byte per
 * repository, blobs are shared by digest but readable only through a repository they were pushed
 * to or mounted into. A tag PUT of an image (or of an index with this host's platform) also
 * derives berth's runnable image under that name, visible in `berth image list`.
 */
export async function registryRoutes(app: FastifyInstance, options: RegistryRoutesOptions): Promise<void> {
  await app.register(
    async (v2) => {
      const store = openImageStore(options.dataDir);
      const uploads = new UploadSessions(store.uploadsDir(), options.uploadIdleTtlMs ?? 60 * 60 * 1000);
      await uploads.sweep();
      const sweeper = setInterval(
        () => void uploads.sweep().catch(() => undefined),
        Math.min(uploads.idleTtlMs, 10 * 60 * 1000),
      );
      sweeper.unref();
      v2.addHook('onClose', async () => clearInterval(sweeper));

      // Blobs are streamed to disk by the handlers (never buffered): no body parsing at all here.
      v2.removeAllContentTypeParsers();
      v2.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

      v2.addHook('onSend', async (_request, reply, payload) => {
        reply.header(apiVersion.name, apiVersion.value);
        return payload;
      });
      v2.setErrorHandler((err: Error, request, reply) => {
        const registryError = toRegistryError(err);
        if (registryError.status >= 500) request.log.error({ err }, 'registry request failed');
        return reply.code(registryError.status).headers(registryError.headers).send(registryError.body());
      });
      v2.setNotFoundHandler((request, reply) =>
        reply
          .code(404)
          .send(
            new RegistryError('NAME_UNKNOWN', `no registry route ${request.method} ${request.url}`).body(),
          ),
      );
      if (options.authorize !== undefined) {
        const authorize = options.authorize;
        v2.addHook('preHandler', async (request) => authorize(request, accessOf(request)));
      }

      v2.get('/', { schema: { hide: true } }, async (_request, reply) =>
        reply.header('content-type', 'application/json').send('{}'),
      );
      v2.route({
        method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
        url: '/*',
        schema: { hide: true },
        exposeHeadRoute: false,
        handler: (request, reply) => dispatch(store, uploads, request, reply),
      });
    },
    { prefix: '/v2' },
  );
}

function wildcard(request: FastifyRequest): string {
  return (request.params as { '*'?: string })['*'] ?? '';
}

function accessOf(request: FastifyRequest): RegistryAccess {
  const action = request.method === 'GET' || request.method === 'HEAD' ? 'pull' : 'push';
  const route = matchRegistryPath(wildcard(request));
  return route !== undefined && 'name' in route ? { action, name: route.name } : { action };
}

async function dispatch(
  store: ImageStore,
  uploads: UploadSessions,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const route = matchRegistryPath(wildcard(request));
  if (route === undefined) {
    throw new RegistryError(
      'NAME_INVALID',
      `"${wildcard(request)}" is not a registry path (invalid repository name?)`,
    );
  }
  if ('name' in route && route.name.length > maxNameLength) {
    throw new RegistryError('NAME_INVALID', `the repository name is longer than ${maxNameLength} characters`);
  }
  const method = request.method;
  const query = request.query as Record<string, string | undefined>;
  switch (route.kind) {
    case 'base':
      return reply.header('content-type', 'application/json').send('{}');
    case 'catalog':
      if (method !== 'GET') break;
      return listCatalog(store, query, reply);
    case 'tags':
      if (method !== 'GET') break;
      return listTags(store, route.name, query, reply);
    case 'referrers':
      if (method !== 'GET') break;
      return listReferrers(store, route.name, route.digest, query, reply);
    case 'manifest':
      if (method === 'GET' || method === 'HEAD') return getManifest(store, route, method, reply);
      if (method === 'PUT') return putManifest(store, route, request, reply);
      if (method === 'DELETE') return deleteManifest(store, route, reply);
      break;
    case 'bad-reference':
      throw badReference(store, route.name, route.reference, method);
    case 'blob':
      if (method === 'GET' || method === 'HEAD') return getBlob(store, route, request, reply);
      if (method === 'DELETE') return deleteBlob(store, route, reply);
      break;
    case 'upload-start':
      if (method === 'POST') return startUpload(store, uploads, route.name, request, query, reply);
      break;
    case 'upload':
      return upload(store, uploads, route, request, query, reply);
  }
  throw new RegistryError('UNSUPPORTED', `${method} is not supported on this registry path`);
}

/**
 * A manifest reference that is neither a tag (`[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`) nor a digest.
 * Reading or deleting it is a 404 as for any manifest the repository lacks (the spec: "if the
 * manifest is not found … MUST be 404"; the conformance suite asks for one by such a name);
 * pushing under it is the client's mistake, a 400. The reference never reaches the store's
 * paths (it may be `..`).
 */
function badReference(store: ImageStore, name: string, reference: string, method: string): RegistryError {
  const what = `"${reference}" is neither a tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}) nor a digest`;
  if (method === 'PUT')
    return new RegistryError('MANIFEST_INVALID', `${what}: a manifest cannot be pushed under it`, {
      name,
      reference,
    });
  if (method !== 'GET' && method !== 'HEAD' && method !== 'DELETE') {
    return new RegistryError('UNSUPPORTED', `${method} is not supported on this registry path`);
  }
  if (store.repositories.tags(name) === undefined) return unknownRepository(name);
  return new RegistryError('MANIFEST_UNKNOWN', `${what}, so no manifest has it`, { name, reference });
}

const berthToRegistry: Partial<Record<BerthError['code'], RegistryErrorCode>> = {
  unauthenticated: 'UNAUTHORIZED',
  forbidden: 'DENIED',
  invalid_argument: 'UNSUPPORTED',
  not_found: 'NAME_UNKNOWN',
};

function toRegistryError(err: Error): RegistryError {
  if (err instanceof RegistryError) return err;
  if (isBerthError(err)) {
    // The berth code keeps its HTTP status (503 unavailable, 507 disk full …) under the spec's code.
    const code = berthToRegistry[err.code] ?? 'UNKNOWN';
    return new RegistryError(code, err.message, err.details, { status: httpStatusByCode[err.code] });
  }
  const status = (err as { statusCode?: number }).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new RegistryError('UNSUPPORTED', err.message, undefined, { status });
  }
  return new RegistryError('UNKNOWN', err.message);
}

/** Deletes registry uploads idle longer than `idleMs` (for `berth image prune`); returns how many. */
export function sweepUploads(store: ImageStore, idleMs: number): Promise<number> {
  return new UploadSessions(store.uploadsDir(), idleMs).sweep();
}
