import { InvalidArgumentError } from '../../core/index.js';

/** The only digest algorithm berth stores; every OCI tool writes sha256 by default. */
const sha256Pattern = /^sha256:([a-f0-9]{64})$/;

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

export function isDigest(text: string): boolean {
  return sha256Pattern.test(text);
}

export function sha256Digest(hex: string): string {
  return `sha256:${hex}`;
}
