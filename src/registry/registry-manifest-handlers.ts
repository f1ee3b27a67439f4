/**
 * The registry's manifest room: reads, pushes and deletes of manifests and indexes. What a client
 * pushes is stored byte for byte per repository (see runtime/image/repositories.ts); berth's own
 * runnable image (rootfs, config) is derived from a pushed image manifest, or from an index's
 * child for this host, under the tag's name — beside the pushed bytes, never instead of them.
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isBerthError, isNotFound } from '../core/index.js';
import {
  digestAlgorithm,
  hostArchitecture,
  type ImageStore,
  type ManifestLink,
} from '../runtime/image/index.js';
import { RegistryError } from './registry-errors.js';
import { unknownRepository } from './registry-listing.js';
import {
  type BlobDescriptor,
  type CheckedManifest,
  checkManifest,
  isForeign,
} from './registry-manifest-checks.js';
import { checkDigest, type RegistryRoute } from './registry-paths.js';

type ManifestRoute = Extract<RegistryRoute, { kind: 'manifest' }>;

/** Manifests are small JSON documents; a real one is kilobytes (same cap as the importer). */
export const maxManifestBytes = 4 * 1024 * 1024;

function isDigestReference(reference: string): boolean {
  return reference.includes(':');
}

function findManifest(store: ImageStore, name: string, reference: string): ManifestLink {
  const repos = store.repositories;
  const digest = isDigestReference(reference) ? checkDigest(reference) : repos.tagTarget(name, reference);
  const found = digest === undefined ? undefined : repos.manifest(name, digest);
  if (found !== undefined) return found;
  if (repos.tags(name) === undefined) throw unknownRepository(name);
  throw new RegistryError(
    'MANIFEST_UNKNOWN',
    `manifest ${isDigestReference(reference) ? reference : `${name}:${reference}`} is not known`,
    isDigestReference(reference) ? { name, digest: reference } : { name, tag: reference },
  );
}

export async function getManifest(
  store: ImageStore,
  route: ManifestRoute,
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

/** Every blob the manifest names must be readable in this repository, with the size it says. */
async function checkBlobs(store: ImageStore, name: string, blobs: readonly BlobDescriptor[]): Promise<void> {
  const missing: RegistryError[] = [];
  for (const d of blobs) {
    if (isForeign(d) && !store.repositories.hasBlob(name, d.digest)) continue;
    if (!store.repositories.hasBlob(name, d.digest)) {
      missing.push(
        new RegistryError('MANIFEST_BLOB_UNKNOWN', `blob ${d.digest} is not in the registry`, {
          digest: d.digest,
        }),
      );
      continue;
    }
    const size = (await stat(store.blobPath(d.digest))).size;
    if (size !== d.size) {
      throw new RegistryError(
        'MANIFEST_INVALID',
        `the manifest says blob ${d.digest} is ${d.size} bytes, but it is ${size}`,
        { digest: d.digest, size: d.size, actual: size },
      );
    }
  }
  const [first, ...more] = missing;
  if (first !== undefined) throw new RegistryError(first.code, first.message, first.detail, { more });
}

function hashOf(bytes: Buffer, reference: string): string {
  const algorithm = isDigestReference(reference) ? digestAlgorithm(checkDigest(reference)) : 'sha256';
  return `${algorithm}:${createHash(algorithm).update(bytes).digest('hex')}`;
}

export async function putManifest(
  store: ImageStore,
  route: ManifestRoute,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const bytes = await readSmallBody(request, maxManifestBytes);
  const digest = hashOf(bytes, route.reference);
  if (isDigestReference(route.reference) && route.reference !== digest) {
    throw new RegistryError('DIGEST_INVALID', `the manifest has digest ${digest}, not ${route.reference}`, {
      expected: route.reference,
      actual: digest,
    });
  }
  const contentType = (request.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
  const checked = checkManifest(bytes, contentType);
  await checkBlobs(store, route.name, checked.blobs);
  const tag = isDigestReference(route.reference) ? undefined : route.reference;
  let notRunnable: string | undefined;
  await store.putManifestBlob(bytes, digest, async () => {
    if (tag !== undefined) notRunnable = await deriveImage(store, route.name, tag, bytes, checked);
    await store.repositories.putManifest(route.name, {
      mediaType: checked.mediaType,
      digest,
      size: bytes.length,
      ...(checked.artifactType === undefined ? {} : { artifactType: checked.artifactType }),
      ...(checked.annotations === undefined ? {} : { annotations: checked.annotations }),
      ...(checked.subject === undefined ? {} : { subject: checked.subject }),
    });
    if (tag !== undefined) await store.repositories.tag(route.name, tag, digest);
  });
  if (tag !== undefined) writeRootfsSoon(store, `${route.name}:${tag}`, request);
  if (checked.subject !== undefined) reply.header('OCI-Subject', checked.subject);
  if (notRunnable !== undefined)
    reply.header('Warning', warning(`berth will not run this image: ${notRunnable}`));
  return reply
    .code(201)
    .header('Location', `/v2/${route.name}/manifests/${digest}`)
    .header('Docker-Content-Digest', digest)
    .send();
}

/**
 * Makes `name:tag` in berth's image store name the runnable image of what was pushed: the image
 * manifest itself, or an index's image for this host (linux/<arch>) if that child is here. For
 * anything else (artifacts, indexes without this platform, sha512 content) the name is dropped
 * so it cannot keep naming what the tag pointed at before. So is it for an image that fails
 * berth's checks (layers against the config's diff_ids): returns why, for a `Warning` header.
 * Such a push is still stored and served: the distribution spec has a registry keep what it is
 * given and allows refusing a manifest only for blobs it lacks (the conformance suite pushes an
 * image whose config lists no diff_ids for its one layer), and whether berth can run an image is
 * not the registry's question. `berth run` of the tag tries again and says the same.
 */
async function deriveImage(
  store: ImageStore,
  name: string,
  tag: string,
  bytes: Buffer,
  checked: CheckedManifest,
): Promise<string | undefined> {
  let runnable: { bytes: Buffer; mediaType: string } | undefined;
  if (checked.kind === 'image' && checked.runnable) runnable = { bytes, mediaType: checked.mediaType };
  else if (checked.kind === 'index') runnable = await hostChild(store, name, checked.children);
  const sha256Only = runnable !== undefined && allSha256(runnable.bytes);
  if (runnable === undefined || !sha256Only) {
    await dropName(store, `${name}:${tag}`);
    return undefined;
  }
  try {
    // The layers are checked against the config's diff_ids now (from the digests the uploads
    // computed while streaming), so a bad image names nothing; the rootfs is written after the
    // reply (`writeRootfsSoon`), or by whoever resolves the image first.
    await store.importManifest(runnable.bytes, runnable.mediaType, {
      name: `${name}:${tag}`,
      rootfs: 'on-use',
    });
    return undefined;
  } catch (err) {
    if (!isBerthError(err) || err.code !== 'invalid_argument') throw err;
    await dropName(store, `${name}:${tag}`);
    return err.message;
  }
}

async function dropName(store: ImageStore, full: string): Promise<void> {
  await store.remove(full).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
}

/**
 * An RFC 7234 warning as the distribution spec has registries send them: code 299, agent `-`, no
 * date, the text a quoted string (its quotes and backslashes escaped, anything but printable
 * ASCII replaced), within the spec's 4096 bytes.
 */
function warning(text: string): string {
  const printable = text.replace(/[^\x20-\x7e]/g, '?').slice(0, 1000);
  return `299 - "${printable.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

/**
 * Writes the rootfs of what a tag push derived once the client has its answer, so that the push
 * costs what storing costs and `berth run` finds the rootfs ready. A failure here is logged: the
 * next resolve of the name tries again and reports it to whoever wants to run the image.
 */
function writeRootfsSoon(store: ImageStore, name: string, request: FastifyRequest): void {
  if (store.names()[name] === undefined) return;
  store.resolve(name).catch((err: unknown) => {
    request.log.warn({ err, image: name }, 'writing the rootfs of a pushed image failed');
  });
}

/** berth names images by sha256 ids: content under other digests is served, not run. */
function allSha256(bytes: Buffer): boolean {
  const digests = bytes.toString('utf8').match(/"(sha\d+):[a-f0-9]+"/g) ?? [];
  return digests.every((d) => d.startsWith('"sha256:'));
}

async function hostChild(
  store: ImageStore,
  name: string,
  children: readonly BlobDescriptor[],
): Promise<{ bytes: Buffer; mediaType: string } | undefined> {
  const chosen = children.find(
    (d) => d.platform?.os === 'linux' && d.platform.architecture === hostArchitecture(),
  );
  const link = chosen === undefined ? undefined : store.repositories.manifest(name, chosen.digest);
  if (link === undefined) return undefined;
  const bytes = await readFile(store.blobPath(link.digest));
  const checked = checkManifest(bytes, link.mediaType);
  return checked.kind === 'image' && checked.runnable ? { bytes, mediaType: link.mediaType } : undefined;
}

/**
 * DELETE of a manifest by digest (with every tag pointing at it) or of a tag alone: 202. The
 * bytes stay until gc finds nothing else references them; the names berth derived go too.
 */
export async function deleteManifest(
  store: ImageStore,
  route: ManifestRoute,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const { name, reference } = route;
  const repos = store.repositories;
  let names: string[];
  if (isDigestReference(reference)) {
    const digest = checkDigest(reference);
    const link = repos.manifest(name, digest);
    if (link !== undefined) await store.keepForGrace(await namedBlobs(store, link));
    const tags = await repos.deleteManifest(name, digest);
    const derived = Object.entries(store.names())
      .filter(([full]) => full.slice(0, full.lastIndexOf(':')) === name)
      .filter(([full]) => repos.tagTarget(name, full.slice(full.lastIndexOf(':') + 1)) === digest)
      .map(([full]) => full);
    names = [...(tags ?? []).map((t) => `${name}:${t}`), ...derived];
    if (tags === undefined && derived.length === 0) {
      throw new RegistryError('MANIFEST_UNKNOWN', `manifest ${digest} is not known`, { name, digest });
    }
  } else {
    const pushed = await repos.deleteTag(name, reference);
    const full = `${name}:${reference}`;
    if (!pushed && store.names()[full] === undefined) {
      throw new RegistryError('MANIFEST_UNKNOWN', `manifest ${full} is not known`, { name, tag: reference });
    }
    names = [full];
  }
  for (const full of new Set(names)) {
    await store.remove(full).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  }
  return reply.code(202).send();
}

/** The manifest and every blob it names (what a cell pulling it right now needs). */
async function namedBlobs(store: ImageStore, link: ManifestLink): Promise<string[]> {
  const checked = checkManifest(await readFile(store.blobPath(link.digest)), link.mediaType);
  return [link.digest, ...checked.blobs.map((d) => d.digest), ...checked.children.map((d) => d.digest)];
}

async function readSmallBody(request: FastifyRequest, limit: number): Promise<Buffer> {
  const tooLarge = () =>
    new RegistryError('MANIFEST_INVALID', `the manifest is larger than ${limit} bytes`, undefined, {
      status: 413,
    });
  if (Number(request.headers['content-length'] ?? 0) > limit) throw tooLarge();
  const raw: IncomingMessage = request.raw;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of raw) {
    size += (chunk as Buffer).length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
