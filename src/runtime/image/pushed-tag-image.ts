import { readFileSync } from 'node:fs';
import { isImageName, normalizeImageName } from './image-reference.js';
import { configTypes, indexTypes, manifestTypes } from './media-types.js';
import { hostArchitecture } from './oci-layout-reader.js';
import type { Repositories } from './repositories.js';
import type { StoreLayout } from './store-layout.js';

/** The manifest berth derives its runnable image from, as stored in the repository. */
export interface RunnableManifest {
  readonly digest: string;
  readonly bytes: Buffer;
  readonly mediaType: string;
}

interface ManifestDoc {
  readonly config?: { readonly mediaType?: string };
  readonly artifactType?: string;
  readonly manifests?: readonly {
    readonly digest?: string;
    readonly platform?: { readonly os?: string; readonly architecture?: string };
  }[];
}

/**
 * What a pushed manifest runs as: an image manifest (an image config, no artifactType) itself,
 * or an index's child for linux/<host arch> when that child is in the repository — whenever it
 * was pushed, before or after the index. Undefined for artifacts and indexes without this host.
 */
export function runnableManifest(
  layout: StoreLayout,
  repositories: Repositories,
  name: string,
  digest: string,
): RunnableManifest | undefined {
  const link = repositories.manifest(name, digest);
  if (link === undefined) return undefined;
  const bytes = readFileSync(layout.blob(link.digest));
  const doc = JSON.parse(bytes.toString('utf8')) as ManifestDoc;
  if (indexTypes.has(link.mediaType)) {
    const child = (doc.manifests ?? []).find(
      (m) => m.platform?.os === 'linux' && m.platform.architecture === hostArchitecture(),
    );
    // One level only: an index whose host entry is itself an index is served, not run.
    const childLink = child?.digest === undefined ? undefined : repositories.manifest(name, child.digest);
    if (childLink === undefined || !manifestTypes.has(childLink.mediaType)) return undefined;
    return runnableManifest(layout, repositories, name, childLink.digest);
  }
  if (!manifestTypes.has(link.mediaType)) return undefined;
  const isImage = configTypes.has(doc.config?.mediaType ?? '') && doc.artifactType === undefined;
  return isImage ? { digest: link.digest, bytes, mediaType: link.mediaType } : undefined;
}

/** The runnable manifest of a pushed tag named by an image reference (`name:tag`), if any. */
export function runnableOfTag(
  layout: StoreLayout,
  repositories: Repositories,
  ref: string,
): { readonly name: string; readonly runnable: RunnableManifest } | undefined {
  if (!isImageName(ref)) return undefined;
  const name = normalizeImageName(ref);
  const colon = name.lastIndexOf(':');
  const repository = name.slice(0, colon);
  const digest = repositories.pushedTag(repository, name.slice(colon + 1));
  const runnable =
    digest === undefined ? undefined : runnableManifest(layout, repositories, repository, digest);
  return runnable === undefined ? undefined : { name, runnable };
}
