import { InvalidArgumentError } from '../../core/index.js';

export const ociManifest = 'application/vnd.oci.image.manifest.v1+json';
export const ociIndex = 'application/vnd.oci.image.index.v1+json';
export const ociConfig = 'application/vnd.oci.image.config.v1+json';
export const ociLayerTar = 'application/vnd.oci.image.layer.v1.tar';
export const ociLayerGzip = 'application/vnd.oci.image.layer.v1.tar+gzip';
export const ociLayerZstd = 'application/vnd.oci.image.layer.v1.tar+zstd';
export const dockerManifest = 'application/vnd.docker.distribution.manifest.v2+json';
export const dockerManifestList = 'application/vnd.docker.distribution.manifest.list.v2+json';
export const dockerConfig = 'application/vnd.docker.container.image.v1+json';

export const manifestTypes: ReadonlySet<string> = new Set([ociManifest, dockerManifest]);
export const indexTypes: ReadonlySet<string> = new Set([ociIndex, dockerManifestList]);
export const configTypes: ReadonlySet<string> = new Set([ociConfig, dockerConfig]);

/** Layer media types berth extracts (tar, gzip'd or zstd'd tar; "nondistributable"/"foreign" alike). */
const layerTypes: ReadonlySet<string> = new Set([
  ociLayerTar,
  ociLayerGzip,
  ociLayerZstd,
  'application/vnd.oci.image.layer.nondistributable.v1.tar+zstd',
  'application/vnd.oci.image.layer.nondistributable.v1.tar',
  'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip',
  'application/vnd.docker.image.rootfs.diff.tar',
  'application/vnd.docker.image.rootfs.diff.tar.gzip',
  'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip',
]);

/** Refuses a layer media type berth cannot extract, saying why. */
export function checkLayerMediaType(mediaType: string, what: string): void {
  if (layerTypes.has(mediaType)) return;
  throw new InvalidArgumentError(`${what} has the unknown media type "${mediaType}"`, { mediaType });
}
