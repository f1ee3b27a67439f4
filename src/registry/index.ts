// The registry layer: the OCI Distribution API of `berth server`, its client, and the image
// resolver cells use to pull what they lack.

export {
  type Descriptor,
  hostArchitecture,
  indexPlatforms,
  type PullOptions,
  type PullResult,
  platformDescriptor,
  pullImage,
  pushImage,
  splitName,
  type TransferProgress,
  type TransferResult,
} from './image-transfer.js';
export { formatPlatform, hostPlatform, type Platform, parsePlatform } from './platform-choice.js';
export { type PullSource, type PullSourceOptions, pullSource } from './pull-source.js';
export {
  ImagePullError,
  PullingImageResolver,
  type PullingImageResolverOptions,
  pullingImageResolver,
} from './pulling-image-resolver.js';
export { type AuthChallenge, parseChallenge } from './registry-challenge.js';
export {
  type BlobProgress,
  defaultServerUrl,
  type FetchedManifest,
  RegistryClient,
  type RegistryClientOptions,
  RegistryRequestError,
} from './registry-client.js';
export { findCredentials, parseCreds, type RegistryCredentials } from './registry-credentials.js';
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
export { parseRemoteReference, type RemoteReference, registryBaseUrl } from './remote-reference.js';
