// The registry layer: the OCI Distribution API of `berth server`, its client, and the image
// resolver cells use to pull what they lack.

export {
  type Descriptor,
  hostArchitecture,
  indexPlatforms,
  type PullResult,
  platformDescriptor,
  pullImage,
  pushImage,
  splitName,
  type TransferResult,
} from './image-transfer.js';
export {
  ImagePullError,
  PullingImageResolver,
  type PullingImageResolverOptions,
  pullingImageResolver,
} from './pulling-image-resolver.js';
export {
  defaultServerUrl,
  type FetchedManifest,
  RegistryClient,
  type RegistryClientOptions,
  RegistryRequestError,
} from './registry-client.js';
export {
  RegistryError,
  type RegistryErrorBody,
  type RegistryErrorCode,
  registryErrorStatus,
} from './registry-errors.js';
export {
  type RegistryAccess,
  type RegistryRoutesOptions,
  registryRoutes,
  sweepUploads,
} from './registry-routes.js';
