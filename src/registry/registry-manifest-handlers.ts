/**
 * The registry's manifest room: tags and catalog listings, manifest reads, and manifest or index
 * pushes (imported into the image store as an OCI layout would be).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isBerthError } from '../core/index.js';
import { type ImageStore, indexTypes, manifestTypes, type StoredManifest } from '../runtime/image/index.js';
import { hostArchitecture, indexPlatforms, platformDescriptor } from './image-transfer.js';
import { RegistryError } from './registry-errors.js';
import { checkDigest, type RegistryRoute } from './registry-paths.js';

/** Manifests are small JSON documents; a real one is kilobytes (same cap as the importer). */
const maxManifestBytes = 4 * 1024 * 1024;

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

export function listTags(
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

export function listCatalog(
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

export async function getManifest(
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

export async function putManifest(
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
