import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { BerthError, codeForHttpStatus, describeFetchError, type ErrorCode } from '../core/index.js';
import { dockerManifest, dockerManifestList, ociIndex, ociManifest } from '../runtime/image/index.js';

/** The `--server` default of `berth image push|pull` and cells: `berth server`'s own default. */
export const defaultServerUrl = 'http://127.0.0.1:8889';

export interface FetchedManifest {
  readonly bytes: Buffer;
  readonly mediaType: string;
  /** sha256 of `bytes`, checked against the registry's Docker-Content-Digest. */
  readonly digest: string;
}

export interface RegistryClientOptions {
  /** `http://host:port` of a berth server or any OCI registry (no auth negotiation yet). */
  readonly serverUrl: string;
  /** A bearer token sent on every request, for when the server checks them. */
  readonly token?: string;
}

const manifestAccept = [ociManifest, dockerManifest, ociIndex, dockerManifestList].join(', ');

/** A failed registry request, as a BerthError whose code says what to do about it. */
export class RegistryRequestError extends BerthError {
  constructor(code: ErrorCode, message: string, details: Record<string, unknown>, options?: ErrorOptions) {
    super(code, message, details, options);
    this.name = 'RegistryRequestError';
  }
}

/**
 * core's one status mapping, with a registry client's policy over it: any 5xx is the remote
 * registry failing (retry later), never a berth `internal`.
 */
function codeForStatus(status: number): ErrorCode {
  return status >= 500 ? 'unavailable' : codeForHttpStatus(status);
}

function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/**
 * A client of the OCI Distribution API over node's fetch: manifests verified against their
 * digest, blobs streamed both ways (never held in memory), pushes that skip blobs the registry has.
 */
export class RegistryClient {
  readonly serverUrl: string;

  constructor(private readonly options: RegistryClientOptions) {
    this.serverUrl = options.serverUrl.replace(/\/+$/, '');
  }

  /** GET a manifest by tag or digest; refuses it unless its bytes hash to the digest named. */
  async getManifest(name: string, reference: string): Promise<FetchedManifest> {
    const response = await this.#request('GET', `/v2/${name}/manifests/${reference}`, {
      headers: { accept: manifestAccept },
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    const digest = sha256(bytes);
    const claimed = response.headers.get('docker-content-digest') ?? undefined;
    const expected = reference.includes(':') ? reference : claimed;
    if (expected !== undefined && expected !== digest) {
      throw new RegistryRequestError(
        'invalid_argument',
        `the manifest ${name}:${reference} from ${this.serverUrl} has digest ${digest}, not ${expected}`,
        { expected, actual: digest },
      );
    }
    const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
    return { bytes, mediaType, digest };
  }

  async hasBlob(name: string, digest: string): Promise<boolean> {
    const response = await this.#request('HEAD', `/v2/${name}/blobs/${digest}`, { allow: [404] });
    return response.status === 200;
  }

  /** The blob's bytes as a stream; the caller verifies them (ImageStore.putBlob does). */
  async getBlob(name: string, digest: string): Promise<Readable> {
    const response = await this.#request('GET', `/v2/${name}/blobs/${digest}`);
    if (response.body === null) return Readable.from([]);
    return Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
  }

  /** Uploads a file as a blob (POST a session, PUT it with ?digest=) unless the registry has it. */
  async pushBlob(name: string, digest: string, path: string): Promise<'pushed' | 'exists'> {
    if (await this.hasBlob(name, digest)) return 'exists';
    const started = await this.#request('POST', `/v2/${name}/blobs/uploads/`, { allow: [201, 202] });
    // A registry may answer a POST with 201 when it mounted the blob by itself.
    if (started.status === 201) return 'exists';
    const location = started.headers.get('location');
    if (location === null) {
      throw new RegistryRequestError(
        'internal',
        `${this.serverUrl} started an upload without a Location`,
        {},
      );
    }
    const target = new URL(location, `${this.serverUrl}/`);
    target.searchParams.set('digest', digest);
    const body = Readable.toWeb(createReadStream(path)) as unknown as ReadableStream<Uint8Array>;
    await this.#request('PUT', target.href, {
      body,
      headers: { 'content-type': 'application/octet-stream' },
    });
    return 'pushed';
  }

  /** PUTs a manifest under a tag (or its digest); returns the digest the registry stored. */
  async putManifest(name: string, reference: string, bytes: Buffer, mediaType: string): Promise<string> {
    const response = await this.#request('PUT', `/v2/${name}/manifests/${reference}`, {
      body: bytes,
      headers: { 'content-type': mediaType },
    });
    return response.headers.get('docker-content-digest') ?? sha256(bytes);
  }

  async listTags(name: string): Promise<string[]> {
    const response = await this.#request('GET', `/v2/${name}/tags/list`);
    const body = (await response.json()) as { tags?: string[] | null };
    return body.tags ?? [];
  }

  async #request(
    method: string,
    pathOrUrl: string,
    init: {
      readonly headers?: Record<string, string>;
      readonly body?: Buffer | ReadableStream<Uint8Array>;
      readonly allow?: readonly number[];
    } = {},
  ): Promise<Response> {
    const url = pathOrUrl.startsWith('/') ? `${this.serverUrl}${pathOrUrl}` : pathOrUrl;
    const headers: Record<string, string> = { ...init.headers };
    if (this.options.token !== undefined) headers.authorization = `Bearer ${this.options.token}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        ...(init.body === undefined ? {} : { body: init.body, duplex: 'half' }),
      } as RequestInit);
    } catch (err) {
      throw new RegistryRequestError(
        'unavailable',
        `Cannot reach the registry at ${this.serverUrl}: ${describeFetchError(err)}`,
        { url, method },
        { cause: err },
      );
    }
    if (response.ok || init.allow?.includes(response.status)) return response;
    const text = await response.text().catch(() => '');
    let reason = text.slice(0, 500);
    let registryCode: string | undefined;
    try {
      const parsed = JSON.parse(text) as { errors?: { code?: string; message?: string }[] };
      const first = parsed.errors?.[0];
      if (first !== undefined) {
        registryCode = first.code;
        reason = `${first.code}: ${first.message ?? ''}`;
      }
    } catch {
      // Not a spec error body (a proxy's HTML page): the text is the reason.
    }
    throw new RegistryRequestError(
      codeForStatus(response.status),
      `${method} ${new URL(url).pathname} on ${this.serverUrl} failed with ${response.status}${reason ? ` (${reason})` : ''}`,
      { url, method, status: response.status, ...(registryCode ? { registry_code: registryCode } : {}) },
    );
  }
}
