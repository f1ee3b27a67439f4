/**
 * The registry's blob room: blob reads (with ranges) and the upload protocol (monolithic, chunked
 * and streamed), each upload a session on disk until its digest is checked.
 */
import { open } from 'node:fs/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errnoCode } from '../core/index.js';
import { type ImageStore, isBlobDigest } from '../runtime/image/index.js';
import { sendFileRange } from './blob-send.js';
import { RegistryError } from './registry-errors.js';
import { apiVersion, checkDigest, type RegistryRoute } from './registry-paths.js';
import { rangeHeader, type UploadSessions } from './upload-sessions.js';

function unknownBlob(digest: string): RegistryError {
  return new RegistryError('BLOB_UNKNOWN', `blob ${digest} is not known`, { digest });
}

/** A blob is read through a repository it was pushed to or mounted into, else 404 as if unknown. */
export async function getBlob(
  store: ImageStore,
  route: Extract<RegistryRoute, { kind: 'blob' }>,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const digest = checkDigest(route.digest);
  if (!store.repositories.hasBlob(route.name, digest)) throw unknownBlob(digest);
  const file = await open(store.blobPath(digest), 'r').catch((err: unknown) => {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  });
  if (file === undefined) throw unknownBlob(digest);
  try {
    const size = (await file.stat()).size;
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
    // The body is written here, not by fastify (see blob-send.ts): the headers go on the raw
    // response, the one the registry's onSend hook adds included.
    reply.hijack();
    for (const [header, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(header, value);
    }
    reply.raw.setHeader(apiVersion.name, apiVersion.value);
    try {
      await sendFileRange(reply.raw, file, start, end);
    } catch (err) {
      reply.raw.destroy();
      throw err;
    }
    return reply;
  } finally {
    await file.close();
  }
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
  const range = parseContentRange(request.headers['content-range']);
  const file = await uploads.finish(id, digest, hasBody(request) ? request.raw : undefined, range);
  try {
    await store.adoptBlob(file, { digest }, `the uploaded blob ${digest}`);
    await store.repositories.linkBlob(name, digest);
  } finally {
    await uploads.cancel(id);
  }
  return reply
    .code(201)
    .header('Location', `/v2/${name}/blobs/${digest}`)
    .header('Docker-Content-Digest', digest)
    .send();
}

export async function startUpload(
  store: ImageStore,
  uploads: UploadSessions,
  name: string,
  request: FastifyRequest,
  query: Record<string, string | undefined>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const from = query.from;
  const mount = query.mount;
  if (
    mount !== undefined &&
    from !== undefined &&
    isBlobDigest(mount) &&
    store.repositories.hasBlob(from, mount)
  ) {
    // Cross-repository mount: the blob is shared, only its link is new. A blob the source
    // repository cannot read is not mounted: the client gets an upload session instead (202).
    await store.repositories.linkBlob(name, mount);
    return reply
      .code(201)
      .header('Location', `/v2/${name}/blobs/${mount}`)
      .header('Docker-Content-Digest', mount)
      .send();
  }
  const id = await uploads.create();
  if (query.digest !== undefined) {
    // A monolithic upload cannot be resumed (the client never saw its Location): whatever fails,
    // a truncated body included, nothing of it stays.
    try {
      return await finishUpload(store, uploads, name, id, checkDigest(query.digest), request, reply);
    } finally {
      await uploads.cancel(id);
    }
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

export async function upload(
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

/** DELETE of a blob: its link in this repository goes (202); the bytes go at gc if nothing else uses them. */
export async function deleteBlob(
  store: ImageStore,
  route: Extract<RegistryRoute, { kind: 'blob' }>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const digest = checkDigest(route.digest);
  if (!(await store.repositories.unlinkBlob(route.name, digest))) throw unknownBlob(digest);
  return reply.code(202).send();
}
