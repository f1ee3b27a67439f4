import { BerthError, isBerthError } from '../core/index.js';
import {
  type ImageStore,
  isImageName,
  normalizeImageName,
  type ResolvedImage,
} from '../runtime/image/index.js';
import { pullImage } from './image-transfer.js';
import { RegistryClient } from './registry-client.js';

export interface PullingImageResolverOptions {
  readonly store: ImageStore;
  /** The berth server (registry) to pull from, e.g. http://10.0.0.1:8889. */
  readonly serverUrl: string;
  readonly token?: string;
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
 * The cell's image resolver: what the local store has, else a pull from the server by the digest
 * its tag points at. Concurrent resolves of one image in this process share one pull (a map of
 * in-flight promises), so 50 instances starting at once pull once; across processes the store's
 * own locks make racing imports safe and blobs already present are not fetched again.
 */
export class PullingImageResolver {
  readonly #inFlight = new Map<string, Promise<ResolvedImage>>();
  readonly #client: RegistryClient;
  /** Pulls started by this resolver (tests and metrics). */
  pulls = 0;

  constructor(private readonly options: PullingImageResolverOptions) {
    this.#client = new RegistryClient({
      serverUrl: options.serverUrl,
      ...(options.token !== undefined ? { token: options.token } : {}),
    });
  }

  async resolve(ref: string): Promise<ResolvedImage> {
    try {
      return await this.options.store.resolve(ref);
    } catch (err) {
      // Only a name can be pulled; an id (or a broken store) is the local answer.
      if (!isBerthError(err) || err.code !== 'not_found' || !isPullable(ref)) throw err;
    }
    const name = normalizeImageName(ref);
    let pull = this.#inFlight.get(name);
    if (pull === undefined) {
      pull = this.#pull(name).finally(() => this.#inFlight.delete(name));
      this.#inFlight.set(name, pull);
    }
    return pull;
  }

  async #pull(name: string): Promise<ResolvedImage> {
    this.pulls += 1;
    try {
      await pullImage(this.options.store, this.#client, name);
      const image = await this.options.store.resolve(name);
      this.options.onPull?.(name, image);
      return image;
    } catch (err) {
      throw new ImagePullError(name, this.options.serverUrl, err);
    }
  }
}

/** `sha256:…` and a bare 64-hex string are image ids (as in docker), never names to pull. */
function isPullable(ref: string): boolean {
  return !ref.startsWith('sha256:') && !/^[a-f0-9]{64}$/.test(ref) && isImageName(ref);
}

export function pullingImageResolver(options: PullingImageResolverOptions): PullingImageResolver {
  return new PullingImageResolver(options);
}
