import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type BerthError, errnoCode, httpStatusByCode, isBerthError } from '../core/index.js';
import {
  type ImageStore,
  indexTypes,
  isDigest,
  manifestTypes,
  openImageStore,
  type StoredManifest,
} from '../runtime/image/index.js';
import { hostArchitecture, indexPlatforms, platformDescriptor } from './image-transfer.js';
import { RegistryError, type RegistryErrorCode } from './registry-errors.js';
import { matchRegistryPath, maxNameLength, type RegistryRoute } from './registry-paths.js';
import { rangeHeader, UploadSessions } from './upload-sessions.js';

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

/** Manifests are small JSON documents; a real one is kilobytes (same cap as the importer). */
const maxManifestBytes = 4 * 1024 * 1024;
const apiVersion = { name: 'Docker-Distribution-API-Version', value: 'registry/2.0' } as const;

/**
 * The OCI Distribution API (pull and push) under `/v2/`, backed by the node's image store: a
 * pushed manifest is imported (verified and flattened) like an OCI layout, so a tag PUT makes the
 * image runnable here and visible in `berth image list`. Blob and manifest namespaces are global
 * (content-addressed), as the store is; repositories are the store's names.
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
    case 'manifest':
      if (method === 'GET' || method === 'HEAD') return getManifest(store, route, method, reply);
      if (method === 'PUT') return putManifest(store, route, request, reply);
      break;
    case 'blob':
      if (method === 'GET' || method === 'HEAD') return getBlob(store, route.digest, request, reply);
      break;
    case 'upload-start':
      if (method === 'POST') return startUpload(store, uploads, route.name, request, query, reply);
      break;
    case 'upload':
      return upload(store, uploads, route, request, query, reply);
  }
  throw new RegistryError(
    'UNSUPPORTED',
    method === 'DELETE'
      ? 'deleting through the registry is not supported; use berth image rm and berth image prune on the server'
      : `${method} is not supported on this registry path`,
  );
}

function checkDigest(digest: string): string {
  if (isDigest(digest)) return digest;
  throw new RegistryError('DIGEST_INVALID', `"${digest}" is not a sha256 digest (sha256:<64 hex digits>)`, {
    digest,
  });
}

function repositoryTags(store: ImageStore): Map<string, string[]> {
  const repos = new Map<string, string[]>();
  for (const full of Object.keys(store.names())) {
    const colon = full.lastIndexOf(':');
    const name = full.slice(0, colon);
    const list = repos.get(name) ?? [];
    list.push(full.slice(colon + 1));
    repos.set(name, list);
  }
  return repos;
}

/** The spec's pagination: `n` entries after `last`, with a Link header when more follow. */
function paginate(
  all: readonly string[],
  query: Record<string, string | undefined>,
  reply: FastifyReply,
  path: string,
): string[] {
  const sorted = [...all].sort();
  const last = query.last;
  const from = last === undefined ? sorted : sorted.filter((t) => t > last);
  const n = query.n === undefined ? undefined : Number(query.n);
  if (n === undefined || !Number.isInteger(n) || n < 0 || n >= from.length) return from;
  const page = from.slice(0, n);
  const end = page.at(-1);
  if (end !== undefined) reply.header('Link', `<${path}?n=${n}&last=${encodeURIComponent(end)}>; rel="next"`);
  return page;
}

function listTags(
  store: ImageStore,
  name: string,
  query: Record<string, string | undefined>,
  reply: FastifyReply,
): FastifyReply {
  const tags = repositoryTags(store).get(name);
  if (tags === undefined)
    throw new RegistryError('NAME_UNKNOWN', `repository "${name}" is not known`, { name });
  return reply.send({ name, tags: paginate(tags, query, reply, `/v2/${name}/tags/list`) });
}

function listCatalog(
  store: ImageStore,
  query: Record<string, string | undefined>,
  reply: FastifyReply,
): FastifyReply {
  const names = [...repositoryTags(store).keys()];
  return reply.send({ repositories: paginate(names, query, reply, '/v2/_catalog') });
}

function findManifest(store: ImageStore, name: string, reference: string): StoredManifest {
  if (reference.includes(':')) {
    const found = store.manifestByDigest(checkDigest(reference));
    if (found === undefined) {
      throw new RegistryError('MANIFEST_UNKNOWN', `manifest ${reference} is not known`, {
        digest: reference,
      });
    }
    return found;
  }
  const found = store.manifestByName(`${name}:${reference}`);
  if (found !== undefined) return found;
  if (!repositoryTags(store).has(name)) {
    throw new RegistryError('NAME_UNKNOWN', `repository "${name}" is not known`, { name });
  }
  throw new RegistryError('MANIFEST_UNKNOWN', `${name}:${reference} is not known`, { name, tag: reference });
}

async function getManifest(
  store: ImageStore,
  route: Extract<RegistryRoute, { kind: 'manifest' }>,
  method: 'GET' | 'HEAD',
  reply: FastifyReply,
): Promise<FastifyReply> {
  const manifest = findManifest(store, route.name, route.reference);
  const bytes = await readFile(store.blobPath(manifest.digest));
  reply
    .header('content-type', manifest.mediaType)
    .header('content-length', String(bytes.length))
    .header('Docker-Content-Digest', manifest.digest)
    .header('ETag', `"${manifest.digest}"`);
  return method === 'HEAD' ? reply.send() : reply.send(bytes);
}

interface Descriptor {
  readonly digest: string;
  readonly size?: number;
}

function descriptorsOf(doc: Record<string, unknown>): Descriptor[] {
  const all: unknown[] = [doc.config, ...(Array.isArray(doc.layers) ? doc.layers : [])];
  return all.map((d, i) => {
    const value = d as { digest?: unknown; size?: unknown } | undefined;
    if (typeof value?.digest !== 'string') {
      throw new RegistryError('MANIFEST_INVALID', `${i === 0 ? 'config' : `layers[${i - 1}]`} has no digest`);
    }
    checkDigest(value.digest);
    return { digest: value.digest, ...(typeof value.size === 'number' ? { size: value.size } : {}) };
  });
}

async function putManifest(
  store: ImageStore,
  route: Extract<RegistryRoute, { kind: 'manifest' }>,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const bytes = await readSmallBody(request.raw, maxManifestBytes);
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  const byDigest = route.reference.includes(':');
  if (byDigest && checkDigest(route.reference) !== digest) {
    throw new RegistryError('DIGEST_INVALID', `the manifest has digest ${digest}, not ${route.reference}`, {
      expected: route.reference,
      actual: digest,
    });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new RegistryError('MANIFEST_INVALID', `the manifest is not JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new RegistryError('MANIFEST_INVALID', 'the manifest is not a JSON object');
  }
  const record = doc as Record<string, unknown>;
  const contentType = (request.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
  const mediaType = typeof record.mediaType === 'string' ? record.mediaType : contentType;
  if (indexTypes.has(mediaType)) return putIndex(store, route, record, digest, reply);
  if (!manifestTypes.has(mediaType)) {
    throw new RegistryError('MANIFEST_INVALID', `unsupported manifest media type "${mediaType}"`, {
      mediaType,
    });
  }
  if (record.schemaVersion !== 2)
    throw new RegistryError('MANIFEST_INVALID', 'the manifest is not schemaVersion 2');
  const missing = descriptorsOf(record)
    .filter((d) => !store.hasBlob(d.digest))
    .map(
      (d) =>
        new RegistryError('MANIFEST_BLOB_UNKNOWN', `blob ${d.digest} is not in the registry`, {
          digest: d.digest,
        }),
    );
  const [first, ...more] = missing;
  if (first !== undefined) {
    throw new RegistryError(first.code, first.message, first.detail, { more });
  }
  try {
    await store.importManifest(
      bytes,
      mediaType,
      byDigest ? {} : { name: `${route.name}:${route.reference}` },
    );
  } catch (err) {
    if (isBerthError(err) && err.code === 'invalid_argument') {
      throw new RegistryError('MANIFEST_INVALID', err.message, { digest });
    }
    throw err;
  }
  return reply
    .code(201)
    .header('Location', `/v2/${route.name}/manifests/${digest}`)
    .header('Docker-Content-Digest', digest)
    .send();
}

/**
 * An image index (`skopeo copy --all`, `podman manifest push`): every manifest it lists must have
 * been pushed (by digest) first. The store keeps single-platform images, so a tag pushed as an
 * index names the image for this host's platform (linux/<arch>), which is what a cell here runs
 * and what a pull of the tag returns; an index with no such image is refused, naming what it has.
 */
async function putIndex(
  store: ImageStore,
  route: Extract<RegistryRoute, { kind: 'manifest' }>,
  index: Record<string, unknown>,
  digest: string,
  reply: FastifyReply,
): Promise<FastifyReply> {
  if (index.schemaVersion !== 2)
    throw new RegistryError('MANIFEST_INVALID', 'the index is not schemaVersion 2');
  const entries = Array.isArray(index.manifests) ? (index.manifests as { digest?: unknown }[]) : [];
  if (entries.length === 0) throw new RegistryError('MANIFEST_INVALID', 'the index lists no manifests');
  const missing: RegistryError[] = [];
  for (const [i, entry] of entries.entries()) {
    if (typeof entry.digest !== 'string')
      throw new RegistryError('MANIFEST_INVALID', `manifests[${i}] has no digest`);
    if (store.manifestByDigest(checkDigest(entry.digest)) === undefined)
      missing.push(
        new RegistryError('MANIFEST_BLOB_UNKNOWN', `manifest ${entry.digest} is not in the registry`, {
          digest: entry.digest,
        }),
      );
  }
  const [first, ...more] = missing;
  if (first !== undefined) throw new RegistryError(first.code, first.message, first.detail, { more });
  const chosen = platformDescriptor(index);
  if (chosen === undefined) {
    throw new RegistryError(
      'MANIFEST_INVALID',
      `the index has no image for linux/${hostArchitecture()}, the platform this registry serves (it has ${indexPlatforms(index)})`,
      { platforms: indexPlatforms(index) },
    );
  }
  if (!route.reference.includes(':')) {
    const child = store.manifestByDigest(chosen.digest) as StoredManifest;
    await store.importManifest(await readFile(store.blobPath(child.digest)), child.mediaType, {
      name: `${route.name}:${route.reference}`,
    });
  }
  return reply
    .code(201)
    .header('Location', `/v2/${route.name}/manifests/${digest}`)
    .header('Docker-Content-Digest', digest)
    .send();
}

async function getBlob(
  store: ImageStore,
  rawDigest: string,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const digest = checkDigest(rawDigest);
  const path = store.blobPath(digest);
  const info = await stat(path).catch((err: unknown) => {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  });
  if (info === undefined) throw new RegistryError('BLOB_UNKNOWN', `blob ${digest} is not known`, { digest });
  const size = info.size;
  reply
    .header('content-type', 'application/octet-stream')
    .header('Docker-Content-Digest', digest)
    .header('ETag', `"${digest}"`)
    .header('Accept-Ranges', 'bytes');
  const range = parseRange(request.headers.range, size);
  if (range === 'invalid') {
    return reply.code(416).header('Content-Range', `bytes */${size}`).send();
  }
  const start = range?.start ?? 0;
  const end = range?.end ?? size - 1;
  reply.header('content-length', String(Math.max(0, end - start + 1)));
  if (range !== undefined) reply.code(206).header('Content-Range', `bytes ${start}-${end}/${size}`);
  if (request.method === 'HEAD') return reply.send();
  if (size === 0) return reply.send(Buffer.alloc(0));
  return reply.send(createReadStream(path, { start, end }));
}

/** One `bytes=a-b` / `bytes=a-` / `bytes=-n` range (what registry clients send); else the whole blob. */
function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'invalid' | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined;
  const [, a = '', b = ''] = match;
  if (a === '' && b === '') return 'invalid';
  const start = a === '' ? Math.max(0, size - Number(b)) : Number(a);
  const end = a === '' || b === '' ? size - 1 : Math.min(Number(b), size - 1);
  if (start > end || start >= size) return 'invalid';
  return { start, end };
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

async function finishUpload(
  store: ImageStore,
  uploads: UploadSessions,
  name: string,
  id: string,
  digest: string,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const file = await uploads.finish(id, digest, hasBody(request) ? request.raw : undefined);
  try {
    await store.adoptBlob(file, { digest }, `the uploaded blob ${digest}`);
  } finally {
    await uploads.cancel(id);
  }
  return reply
    .code(201)
    .header('Location', `/v2/${name}/blobs/${digest}`)
    .header('Docker-Content-Digest', digest)
    .send();
}

async function startUpload(
  store: ImageStore,
  uploads: UploadSessions,
  name: string,
  request: FastifyRequest,
  query: Record<string, string | undefined>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  if (query.mount !== undefined && isDigest(query.mount) && store.hasBlob(query.mount)) {
    // Cross-repository mount: blobs are global in the store, so any known blob mounts.
    return reply
      .code(201)
      .header('Location', `/v2/${name}/blobs/${query.mount}`)
      .header('Docker-Content-Digest', query.mount)
      .send();
  }
  const id = await uploads.create();
  if (query.digest !== undefined) {
    return finishUpload(store, uploads, name, id, checkDigest(query.digest), request, reply);
  }
  return reply
    .code(202)
    .header('Location', `/v2/${name}/blobs/uploads/${id}`)
    .header('Range', rangeHeader(0))
    .header('Docker-Upload-UUID', id)
    .send();
}

function parseContentRange(header: string | undefined): { start: number; end: number } | undefined {
  if (header === undefined) return undefined;
  // The spec's form is "<start>-<end>"; some clients send the RFC 7233 "bytes a-b/total" form.
  const match = /^(?:bytes )?(\d+)-(\d+)(?:\/(?:\d+|\*))?$/.exec(header.trim());
  if (!match) throw new RegistryError('BLOB_UPLOAD_INVALID', `invalid Content-Range "${header}"`);
  const start = Number(match[1]);
  const end = Number(match[2]);
  if (end < start) throw new RegistryError('BLOB_UPLOAD_INVALID', `invalid Content-Range "${header}"`);
  return { start, end };
}

async function upload(
  store: ImageStore,
  uploads: UploadSessions,
  route: Extract<RegistryRoute, { kind: 'upload' }>,
  request: FastifyRequest,
  query: Record<string, string | undefined>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const { name, id } = route;
  const location = `/v2/${name}/blobs/uploads/${id}`;
  switch (request.method) {
    case 'GET': {
      const size = await uploads.size(id);
      return reply
        .code(204)
        .header('Location', location)
        .header('Range', rangeHeader(size))
        .header('Docker-Upload-UUID', id)
        .send();
    }
    case 'PATCH': {
      const range = parseContentRange(request.headers['content-range']);
      const size = await uploads.append(id, request.raw, range);
      return reply
        .code(202)
        .header('Location', location)
        .header('Range', rangeHeader(size))
        .header('Docker-Upload-UUID', id)
        .send();
    }
    case 'PUT': {
      if (query.digest === undefined) {
        throw new RegistryError('DIGEST_INVALID', 'completing an upload needs ?digest=');
      }
      return finishUpload(store, uploads, name, id, checkDigest(query.digest), request, reply);
    }
    case 'DELETE':
      await uploads.size(id);
      await uploads.cancel(id);
      return reply.code(204).send();
    default:
      throw new RegistryError('UNSUPPORTED', `${request.method} is not supported on an upload`);
  }
}

async function readSmallBody(raw: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of raw) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      throw new RegistryError('MANIFEST_INVALID', `the manifest is larger than ${limit} bytes`, undefined, {
        status: 413,
      });
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
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
