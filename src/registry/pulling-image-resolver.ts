import { BerthError, isBerthError } from '../core/index.js';
import type { ImageStore, ResolvedImage } from '../runtime/image/index.js';
import { pullImage } from './image-transfer.js';
import type { Platform } from './platform-choice.js';
import { type PullSourceOptions, pullSource } from './pull-source.js';
import type { RegistryClient } from './registry-client.js';
import { parseRemoteReference } from './remote-reference.js';

export interface PullingImageResolverOptions extends PullSourceOptions {
  readonly store: ImageStore;
  /** The platform taken from an index: the host's unless a test says otherwise. */
  readonly platform?: Platform;
  /** Called after each completed pull (logging, history). */
  readonly onPull?: (ref: string, image: ResolvedImage) => void;
}

/**
 * A failed pull, for the executor to report as a run error on the ActualLRP or Task (not a crash
 * loop). `code` is the cause's: `not_found` (the server has no such image), `unavailable` (the
 * server could not be reached or failed: retryable), `invalid_argument` (the image failed
 * verification), `unauthenticated`/`forbidden`, `resource_exhausted` (disk full).
 * `details.reason` is always "image_pull_failed".
 */
export class ImagePullError extends BerthError {
  constructor(ref: string, serverUrl: string, cause: unknown) {
    const inner = isBerthError(cause) ? cause : undefined;
    const message = cause instanceof Error ? cause.message : String(cause);
    super(
      inner?.code ?? 'internal',
      `Cannot pull image "${ref}" from ${serverUrl}: ${message}`,
      {
        reason: 'image_pull_failed',
        image: ref,
        server: serverUrl,
        ...(inner ? { cause: inner.toJSON() } : {}),
      },
      { cause },
    );
    this.name = 'ImagePullError';
  }
}

/**
 * The cell's image resolver: what the local store has, else a pull: from the berth server for a
 * name without a registry host, from the registry it names otherwise (`pull-source.ts`), the
 * host's platform from an index. A `NAME@DIGEST` whose manifest the store holds is local. Concurrent resolves of one image in this process share one pull (a map of
 * in-flight promises), so 50 instances starting at once pull once; across processes the store's
 * own locks make racing imports safe and blobs already present are not fetched again.
 */
export class PullingImageResolver {
  readonly #inFlight = new Map<string, Promise<ResolvedImage>>();
  readonly #clients = new Map<string, RegistryClient>();
  /** Pulls started by this resolver (tests and metrics). */
  pulls = 0;

  constructor(private readonly options: PullingImageResolverOptions) {}

  async resolve(ref: string): Promise<ResolvedImage> {
    try {
      return await this.options.store.resolve(ref);
    } catch (err) {
      // Only a name can be pulled; an id (or a broken store) is the local answer.
      if (!isBerthError(err) || err.code !== 'not_found' || !isPullable(ref)) throw err;
    }
    const digest = parseRemoteReference(ref).digest;
    const held = digest === undefined ? undefined : this.options.store.manifestByDigest(digest);
    if (held !== undefined) return this.options.store.resolve(held.id);
    let pull = this.#inFlight.get(ref);
    if (pull === undefined) {
      pull = this.#pull(ref).finally(() => this.#inFlight.delete(ref));
      this.#inFlight.set(ref, pull);
    }
    return pull;
  }

  async #pull(ref: string): Promise<ResolvedImage> {
    this.pulls += 1;
    let url = this.options.serverUrl;
    try {
      const source = pullSource(ref, this.options, this.#clients);
      url = source.url;
      const pulled = await pullImage(this.options.store, source.client, source.reference, {
        ...(this.options.platform !== undefined ? { platform: this.options.platform } : {}),
      });
      const image = await this.options.store.resolve(pulled.image.id);
      this.options.onPull?.(ref, image);
      return image;
    } catch (err) {
      throw new ImagePullError(ref, url, err);
    }
  }
}

/**
 * `sha256:…` and a bare 64-hex string are image ids (as in docker), never names to pull; a name,
 * with a registry host or a digest or neither, is.
 */
function isPullable(ref: string): boolean {
  if (ref.startsWith('sha256:') || /^[a-f0-9]{64}$/.test(ref)) return false;
  try {
    parseRemoteReference(ref);
    return true;
  } catch (err) {
    if (isBerthError(err) && err.code === 'invalid_argument') return false;
    throw err;
  }
}

export function pullingImageResolver(options: PullingImageResolverOptions): PullingImageResolver {
  return new PullingImageResolver(options);
}
