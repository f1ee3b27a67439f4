/**
 * The registry's content discovery: tag lists, the catalog (both paginated as the spec says) and
 * the referrers API (OCI distribution spec v1.1).
 */
import type { FastifyReply } from 'fastify';
import { type ImageStore, type ManifestDescriptor, ociIndex } from '../runtime/image/index.js';
import { RegistryError } from './registry-errors.js';
import { checkDigest } from './registry-paths.js';

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

export function unknownRepository(name: string): RegistryError {
  return new RegistryError('NAME_UNKNOWN', `repository "${name}" is not known`, { name });
}

export function listTags(
  store: ImageStore,
  name: string,
  query: Record<string, string | undefined>,
  reply: FastifyReply,
): FastifyReply {
  const tags = store.repositories.tags(name);
  if (tags === undefined) throw unknownRepository(name);
  return reply.send({ name, tags: paginate(tags, query, reply, `/v2/${name}/tags/list`) });
}

export function listCatalog(
  store: ImageStore,
  query: Record<string, string | undefined>,
  reply: FastifyReply,
): FastifyReply {
  return reply.send({ repositories: paginate(store.repositories.names(), query, reply, '/v2/_catalog') });
}

/**
 * `GET /v2/<name>/referrers/<digest>`: an image index of the manifests in this repository whose
 * `subject` is the digest (an unknown subject has none: 200 with an empty list, as the spec
 * says), optionally only those of one `artifactType`, which `OCI-Filters-Applied` then names.
 */
export function listReferrers(
  store: ImageStore,
  name: string,
  rawDigest: string,
  query: Record<string, string | undefined>,
  reply: FastifyReply,
): FastifyReply {
  const digest = checkDigest(rawDigest);
  const wanted = query.artifactType;
  const manifests: ManifestDescriptor[] = store.repositories
    .referrers(name, digest)
    .filter((link) => wanted === undefined || link.artifactType === wanted)
    .map(({ mediaType, digest: d, size, artifactType, annotations }) => ({
      mediaType,
      digest: d,
      size,
      ...(artifactType === undefined ? {} : { artifactType }),
      ...(annotations === undefined ? {} : { annotations }),
    }));
  if (wanted !== undefined) reply.header('OCI-Filters-Applied', 'artifactType');
  return reply
    .header('content-type', ociIndex)
    .send(Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: ociIndex, manifests })));
}
