import { InvalidArgumentError } from '../../core/index.js';

/** What berth's images are named by (ids, rootfs dirs); every OCI tool writes sha256 by default. */
const sha256Pattern = /^sha256:([a-f0-9]{64})$/;

/** The algorithms a stored blob may be named by (the OCI image spec's registered ones). */
export type DigestAlgorithm = 'sha256' | 'sha512';
const blobDigestPattern = /^(sha256):([a-f0-9]{64})$|^(sha512):([a-f0-9]{128})$/;

/**
 * Returns the hex part of a `sha256:<64 hex>` digest, refusing anything else. Digests from
 * manifests become file names in the store, so this strict check is also what keeps a crafted
 * digest such as `sha256:../../etc/passwd` from naming a path.
 */
export function digestHex(digest: string, what = 'digest'): string {
  const match = sha256Pattern.exec(digest);
  if (match?.[1] !== undefined) return match[1];
  const algorithm = /^([a-z0-9+._-]+):/.exec(digest)?.[1];
  if (algorithm !== undefined && algorithm !== 'sha256') {
    throw new InvalidArgumentError(
      `Cannot use ${what} "${digest}": digest algorithm "${algorithm}" is not supported (only sha256)`,
      { digest },
    );
  }
  throw new InvalidArgumentError(`Cannot use ${what} "${digest}": expected sha256:<64 hex digits>`, {
    digest,
  });
}

/**
 * Splits a blob digest (sha256 or sha512, the registry's) into algorithm and hex, refusing any
 * other form for the same path-safety reason as `digestHex`.
 */
export function parseBlobDigest(
  digest: string,
  what = 'digest',
): { algorithm: DigestAlgorithm; hex: string } {
  const match = blobDigestPattern.exec(digest);
  if (match?.[1] !== undefined && match[2] !== undefined) return { algorithm: 'sha256', hex: match[2] };
  if (match?.[3] !== undefined && match[4] !== undefined) return { algorithm: 'sha512', hex: match[4] };
  throw new InvalidArgumentError(
    `Cannot use ${what} "${digest}": expected sha256:<64 hex digits> or sha512:<128 hex digits>`,
    { digest },
  );
}

/** A sha256 digest: what berth names images by. */
export function isDigest(text: string): boolean {
  return sha256Pattern.test(text);
}

/** A digest a blob or manifest may have in the store: sha256 or sha512. */
export function isBlobDigest(text: string): boolean {
  return blobDigestPattern.test(text);
}

export function sha256Digest(hex: string): string {
  return `sha256:${hex}`;
}

/** The algorithm part of a blob digest (sha256 when it has none berth knows). */
export function digestAlgorithm(digest: string): DigestAlgorithm {
  return digest.startsWith('sha512:') ? 'sha512' : 'sha256';
}
