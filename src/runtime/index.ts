// The runtime's public surface for upper layers. The CLI imports modules directly to keep the
// hot path of `berth run` free of what it does not use.
export * from './cni-network.js';
export * from './layered-root.js';
export * from './pod-firewall.js';
export * from './pod-gc.js';
export * from './pod-log.js';
export * from './pod-log-reader.js';
export * from './pod-manifest.js';
export * from './pod-runtime.js';
export * from './pod-state.js';
export * from './pod-store.js';
