import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from '../../core/index.js';
import { isImageName, normalizeImageName } from './image-reference.js';
import { indexTypes } from './media-types.js';
import { hostArchitecture } from './oci-layout-reader.js';
import type { Repositories } from './repositories.js';
import type { StoreLayout } from './store-layout.js';

interface IndexDoc {
  readonly manifests?: readonly {
    readonly platform?: { os?: string; architecture?: string; variant?: string };
  }[];
}

/**
 * Why a name berth has no runnable image for is still a registry tag: it points at an artifact
 * (a signature, an SBOM, a chart…) or at an index without this host's platform. Only image
 * manifests run; saying what the tag is beats "no such image".
 */
export function notRunnableError(
  layout: StoreLayout,
  repositories: Repositories,
  ref: string,
): InvalidArgumentError | undefined {
  if (!isImageName(ref)) return undefined;
  const name = normalizeImageName(ref);
  const colon = name.lastIndexOf(':');
  const digest = repositories.pushedTag(name.slice(0, colon), name.slice(colon + 1));
  const link = digest === undefined ? undefined : repositories.manifest(name.slice(0, colon), digest);
  if (link === undefined) return undefined;
  if (indexTypes.has(link.mediaType)) {
    const doc = JSON.parse(readFileSync(layout.blob(link.digest), 'utf8')) as IndexDoc;
    const platforms = (doc.manifests ?? [])
      .map((m) => [m.platform?.os, m.platform?.architecture, m.platform?.variant].filter(Boolean).join('/'))
      .filter((p) => p !== '');
    return new InvalidArgumentError(
      `Cannot run "${name}": it is an image index with no linux/${hostArchitecture()} image (it has ${platforms.join(', ') || 'no platforms'})`,
      { name, digest: link.digest, platforms },
    );
  }
  return new InvalidArgumentError(
    `Cannot run "${name}": it is an artifact${link.artifactType === undefined ? '' : ` of type ${link.artifactType}`}, not an image; only image manifests run`,
    {
      name,
      digest: link.digest,
      ...(link.artifactType === undefined ? {} : { artifactType: link.artifactType }),
    },
  );
}
