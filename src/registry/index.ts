// The registry layer: the OCI Distribution API of `berth server`, its client, and the image
// resolver cells use to pull what they lack.
export * from './image-transfer.js';
export * from './pulling-image-resolver.js';
export * from './registry-client.js';
export * from './registry-errors.js';
export * from './registry-routes.js';
