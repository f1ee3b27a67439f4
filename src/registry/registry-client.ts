import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { Readable, Transform } from 'node:stream';
import { BerthError, codeForHttpStatus, describeFetchError, type ErrorCode } from '../core/index.js';
import { dockerManifest, dockerManifestList, ociIndex, ociManifest } from '../runtime/image/index.js';
import { getStream, textOf } from './blob-download.js';
import { answerChallenge, parseChallenge, scopeFor } from './registry-challenge.js';
import type { RegistryCredentials } from './registry-credentials.js';

/** The `--server` default of `berth image push|pull` and cells: `berth server`'s own default. */
export const defaultServerUrl = 'http://127.0.0.1:8889';

export interface FetchedManifest {
  readonly bytes: Buffer;
  readonly mediaType: string;
  /** The digest of `bytes` (sha256, or sha512 when asked for by one), checked against the registry's. */
  readonly digest: string;
}

export interface RegistryClientOptions {
  /** `http(s)://host:port` of a berth server or any OCI distribution registry. */
  readonly serverUrl: string;
  /** A berth API token sent as Bearer on every request (berth's own server only). */
  readonly token?: string;
  /** The user's credentials, offered when the registry challenges (Basic, or to its token service). */
  readonly credentials?: RegistryCredentials;
}

/** Bytes of a blob moved so far, for progress bars. */
export type BlobProgress = (digest: string, bytes: number) => void;

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

/** The algorithm of a digest the OCI image spec registers (sha256, sha512); others are refused. */
function algorithmOf(digest: string): 'sha256' | 'sha512' {
  const algorithm = digest.slice(0, digest.indexOf(':'));
  if (algorithm === 'sha256' || algorithm === 'sha512') return algorithm;
  throw new RegistryRequestError('invalid_argument', `unsupported digest algorithm in "${digest}"`, {
    digest,
  });
}

function digestOf(bytes: Uint8Array, algorithm: 'sha256' | 'sha512'): string {
  return `${algorithm}:${createHash(algorithm).update(bytes).digest('hex')}`;
}

/**
 * Passes a blob through while hashing and counting it; fails the stream (nothing half trusted)
 * unless it ends with exactly `size` bytes hashing to `digest`.
 */
function verifying(digest: string, size: number | undefined, onProgress?: BlobProgress): Transform {
  const hash = createHash(algorithmOf(digest));
  let length = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      length += chunk.length;
      onProgress?.(digest, length);
      callback(null, chunk);
    },
    flush(callback) {
      const actual = `${digest.slice(0, digest.indexOf(':'))}:${hash.digest('hex')}`;
      if (actual !== digest || (size !== undefined && length !== size)) {
        callback(
          new RegistryRequestError(
            'invalid_argument',
            `the blob ${digest} arrived as ${length} bytes hashing to ${actual}${size !== undefined ? ` (expected ${size} bytes)` : ''}`,
            { expected: digest, actual, size: length },
          ),
        );
        return;
      }
      callback();
    },
  });
}

/**
 * A client of the OCI Distribution API over node's fetch (blob reads over node:http): manifests verified against their
 * digest, blobs streamed both ways (never held in memory) and verified while they stream, pushes
 * that skip blobs the registry has. A 401 is answered once per scope as docker does (Basic, or the
 * token flow of `registry-challenge.ts`) and the request retried.
 */
export class RegistryClient {
  readonly serverUrl: string;
  /** `Authorization` values won from challenges, by the scope they were asked for. */
  readonly #authorizations = new Map<string, string>();
  #lastAuthorization: string | undefined;

  constructor(private readonly options: RegistryClientOptions) {
    this.serverUrl = options.serverUrl.replace(/\/+$/, '');
  }

  /** GET a manifest by tag or digest; refuses it unless its bytes hash to the digest named. */
  async getManifest(name: string, reference: string): Promise<FetchedManifest> {
    const response = await this.#request('GET', `/v2/${name}/manifests/${reference}`, {
      headers: { accept: manifestAccept },
      repository: name,
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    const claimed = response.headers.get('docker-content-digest') ?? undefined;
    const expected = reference.includes(':') ? reference : claimed;
    const digest = digestOf(bytes, expected === undefined ? 'sha256' : algorithmOf(expected));
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
    const response = await this.#request('HEAD', `/v2/${name}/blobs/${digest}`, {
      allow: [404],
      repository: name,
    });
    return response.status === 200;
  }

  /**
   * The blob's bytes as a stream that fails unless they hash to `digest` (and number `size`):
   * what a pull writes is verified here whatever the store checks again.
   */
  async getBlob(name: string, digest: string, size?: number, onProgress?: BlobProgress): Promise<Readable> {
    const url = `${this.serverUrl}/v2/${name}/blobs/${digest}`;
    const scope = scopeFor(name, ['pull']);
    let response = await this.#getStream(url, scope);
    if (response.statusCode === 401 && this.options.token === undefined) {
      const challenge = parseChallenge(String(response.headers['www-authenticate'] ?? ''));
      if (challenge !== undefined) {
        response.resume();
        await this.#answer(challenge, scope);
        response = await this.#getStream(url, scope);
      }
    }
    if (response.statusCode !== 200) {
      throw this.#failure('GET', url, response.statusCode ?? 0, await textOf(response).catch(() => ''));
    }
    const checked = verifying(digest, size, onProgress);
    response.on('error', (err) => checked.destroy(err));
    return response.pipe(checked);
  }

  /** A streamed GET (node:http, see blob-download.ts) with the best authorization for `scope`. */
  async #getStream(url: string, scope: string): Promise<IncomingMessage> {
    const authorization = this.#authorizationFor(scope);
    try {
      return await getStream(
        url,
        authorization === undefined ? {} : { authorization },
        new URL(this.serverUrl).host,
      );
    } catch (err) {
      throw new RegistryRequestError(
        'unavailable',
        `Cannot reach the registry at ${this.serverUrl}: ${describeFetchError(err)}`,
        { url, method: 'GET' },
        { cause: err },
      );
    }
  }

  /** Uploads a file as a blob (POST a session, PUT it with ?digest=) unless the registry has it. */
  async pushBlob(
    name: string,
    digest: string,
    path: string,
    onProgress?: BlobProgress,
  ): Promise<'pushed' | 'exists'> {
    if (await this.hasBlob(name, digest)) return 'exists';
    const started = await this.#request('POST', `/v2/${name}/blobs/uploads/`, {
      allow: [201, 202],
      repository: name,
      push: true,
    });
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
    const file = createReadStream(path);
    let sent = 0;
    if (onProgress !== undefined) {
      file.on('data', (chunk) => {
        sent += chunk.length;
        onProgress(digest, sent);
      });
    }
    const body = Readable.toWeb(file) as unknown as ReadableStream<Uint8Array>;
    await this.#request('PUT', target.href, {
      body,
      headers: { 'content-type': 'application/octet-stream' },
      repository: name,
      push: true,
    });
    return 'pushed';
  }

  /** PUTs a manifest under a tag (or its digest); returns the digest the registry stored. */
  async putManifest(name: string, reference: string, bytes: Buffer, mediaType: string): Promise<string> {
    const response = await this.#request('PUT', `/v2/${name}/manifests/${reference}`, {
      body: bytes,
      headers: { 'content-type': mediaType },
      repository: name,
      push: true,
    });
    return response.headers.get('docker-content-digest') ?? sha256(bytes);
  }

  async listTags(name: string): Promise<string[]> {
    const response = await this.#request('GET', `/v2/${name}/tags/list`, { repository: name });
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
      /** The repository the request is about, for the scope of a token. */
      readonly repository?: string;
      /** A write: the token must allow push (docker asks for `pull,push`). */
      readonly push?: boolean;
    } = {},
  ): Promise<Response> {
    const url = pathOrUrl.startsWith('/') ? `${this.serverUrl}${pathOrUrl}` : pathOrUrl;
    const scope =
      init.repository === undefined
        ? undefined
        : scopeFor(init.repository, init.push === true ? ['pull', 'push'] : ['pull']);
    let response = await this.#send(method, url, init, scope);
    // A stream cannot be sent twice: its 401 is final (the POST before it won the token).
    const replayable = !(init.body instanceof ReadableStream);
    if (response.status === 401 && replayable && this.options.token === undefined) {
      const challenge = parseChallenge(response.headers.get('www-authenticate') ?? '');
      if (challenge !== undefined) {
        await response.arrayBuffer().catch(() => undefined);
        await this.#answer(challenge, scope);
        response = await this.#send(method, url, init, scope);
      }
    }
    if (response.ok || init.allow?.includes(response.status)) return response;
    throw this.#failure(method, url, response.status, await response.text().catch(() => ''));
  }

  /** Answers a 401's challenge for `scope` (Basic, or a token from the realm) and keeps the answer. */
  async #answer(challenge: NonNullable<ReturnType<typeof parseChallenge>>, scope: string | undefined) {
    const authorization = await answerChallenge(
      challenge,
      this.options.credentials,
      scope,
      new URL(this.serverUrl).host,
    );
    this.#authorizations.set(scope ?? '', authorization);
    this.#lastAuthorization = authorization;
  }

  /** A failed request as an error whose code and message say what the registry answered. */
  #failure(method: string, url: string, status: number, text: string): RegistryRequestError {
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
    return new RegistryRequestError(
      codeForStatus(status),
      `${method} ${new URL(url).pathname} on ${this.serverUrl} failed with ${status}${reason ? ` (${reason})` : ''}`,
      { url, method, status, ...(registryCode ? { registry_code: registryCode } : {}) },
    );
  }

  /** One request with the best authorization known for its scope. */
  async #send(
    method: string,
    url: string,
    init: { readonly headers?: Record<string, string>; readonly body?: Buffer | ReadableStream<Uint8Array> },
    scope: string | undefined,
  ): Promise<Response> {
    const headers: Record<string, string> = { ...init.headers };
    const authorization = this.#authorizationFor(scope);
    if (authorization !== undefined) headers.authorization = authorization;
    try {
      return await fetch(url, {
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
  }

  #authorizationFor(scope: string | undefined): string | undefined {
    if (this.options.token !== undefined) return `Bearer ${this.options.token}`;
    return this.#authorizations.get(scope ?? '') ?? this.#fallbackAuthorization(scope);
  }

  /**
   * For a scope not asked for yet: a push token also reads (`pull,push` covers `pull`), and a
   * Basic answer is good for everything; otherwise nothing, so the registry challenges again.
   */
  #fallbackAuthorization(scope: string | undefined): string | undefined {
    if (this.#lastAuthorization?.startsWith('Basic ')) return this.#lastAuthorization;
    if (scope?.endsWith(':pull')) return this.#authorizations.get(`${scope},push`);
    return undefined;
  }
}
