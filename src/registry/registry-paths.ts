import { isBlobDigest } from '../runtime/image/index.js';
import { RegistryError } from './registry-errors.js';

/** The header every answer under `/v2/` carries, as docker expects of a registry. */
export const apiVersion = { name: 'Docker-Distribution-API-Version', value: 'registry/2.0' } as const;

/**
 * Routing of `/v2/<name>/…` by hand: repository names contain slashes (`library/busybox`), so
 * one wildcard route receives every request and these patterns split name from action, as the
 * spec's grammar does (`[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(\/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*`).
 */
const component = '[a-z0-9]+(?:(?:\\.|_|__|-+)[a-z0-9]+)*';
const name = `(${component}(?:/${component})*)`;
const reference = '([A-Za-z0-9_][A-Za-z0-9._-]{0,127}|[a-z0-9+._-]+:[A-Za-z0-9=_-]+)';

export type RegistryRoute =
  | { readonly kind: 'base' }
  | { readonly kind: 'catalog' }
  | { readonly kind: 'manifest'; readonly name: string; readonly reference: string }
  /** A manifest path whose reference is neither a tag nor a digest: no manifest can have it. */
  | { readonly kind: 'bad-reference'; readonly name: string; readonly reference: string }
  | { readonly kind: 'blob'; readonly name: string; readonly digest: string }
  | { readonly kind: 'upload-start'; readonly name: string }
  | { readonly kind: 'upload'; readonly name: string; readonly id: string }
  | { readonly kind: 'tags'; readonly name: string }
  | { readonly kind: 'referrers'; readonly name: string; readonly digest: string };

const patterns: ReadonlyArray<readonly [RegExp, (m: RegExpExecArray) => RegistryRoute]> = [
  [/^$/, () => ({ kind: 'base' })],
  [/^_catalog$/, () => ({ kind: 'catalog' })],
  [
    new RegExp(`^${name}/manifests/${reference}$`),
    (m) => ({ kind: 'manifest', name: g(m, 1), reference: g(m, 2) }),
  ],
  [
    new RegExp(`^${name}/manifests/([^/]+)$`),
    (m) => ({ kind: 'bad-reference', name: g(m, 1), reference: g(m, 2) }),
  ],
  [new RegExp(`^${name}/blobs/uploads/?$`), (m) => ({ kind: 'upload-start', name: g(m, 1) })],
  [
    new RegExp(`^${name}/blobs/uploads/([A-Za-z0-9-]+)$`),
    (m) => ({ kind: 'upload', name: g(m, 1), id: g(m, 2) }),
  ],
  [new RegExp(`^${name}/blobs/([^/]+)$`), (m) => ({ kind: 'blob', name: g(m, 1), digest: g(m, 2) })],
  [new RegExp(`^${name}/tags/list$`), (m) => ({ kind: 'tags', name: g(m, 1) })],
  [new RegExp(`^${name}/referrers/([^/]+)$`), (m) => ({ kind: 'referrers', name: g(m, 1), digest: g(m, 2) })],
];

function g(match: RegExpExecArray, i: number): string {
  return match[i] ?? '';
}

/** The route of a path below `/v2/` (no query string), or undefined when none matches. */
export function matchRegistryPath(path: string): RegistryRoute | undefined {
  for (const [pattern, build] of patterns) {
    const match = pattern.exec(path);
    if (match) return build(match);
  }
  return undefined;
}

export const maxNameLength = 255;

/** A digest the registry stores (sha256 or sha512), else 400 DIGEST_INVALID naming what is wrong. */
export function checkDigest(digest: string): string {
  if (isBlobDigest(digest)) return digest;
  const algorithm = /^([a-z0-9+._-]+):/.exec(digest)?.[1];
  const why =
    algorithm !== undefined && algorithm !== 'sha256' && algorithm !== 'sha512'
      ? `the digest algorithm "${algorithm}" is not supported (sha256 and sha512 are)`
      : 'expected sha256:<64 hex digits> or sha512:<128 hex digits>';
  throw new RegistryError('DIGEST_INVALID', `"${digest}" is not a valid digest: ${why}`, { digest });
}
