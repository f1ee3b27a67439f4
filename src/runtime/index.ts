// The runtime's public surface for upper layers. The CLI imports modules directly to keep the
// hot path of `berth run` free of what it does not use.

export { makeBusyboxRootfs } from './busybox-rootfs.js';
export {
  attachNetwork,
  attachNetworkInBackground,
  cniPluginDir,
  detachNetwork,
  detachNetworkInBackground,
  type NetworkAttachment,
  netnsDir,
  netnsName,
  netnsPath,
  type PortPublish,
  prepareHostNetwork,
  type ReservedIn,
} from './cni-network.js';
export { LayeredRoot, type RootEntry, readInLayeredRoot } from './layered-root.js';
export {
  bridgeName,
  ensurePodNetworkRules,
  hostGuardChain,
  hostGuardJump,
  masqueradeRule,
  type PodRulesFound,
  podSubnet,
  recheckPodNetworkRules,
} from './pod-firewall.js';
export { collectGarbage, type GcOptions, type GcReport } from './pod-gc.js';
export {
  checkLogSizeMax,
  defaultLogSizeMax,
  logDroppedMarker,
  logFileNames,
  maxLogSizeMax,
  minLogSizeMax,
  parseLogSizeMax,
  RotatingLogWriter,
} from './pod-log.js';
export { encodeLogRecords, type LogRecord, LogRecordDecoder, type LogStream } from './pod-log-format.js';
export {
  copyLog,
  defaultLogTailBytes,
  endLog,
  followLog,
  LogRecordWriter,
  type LogTail,
  readLogTail,
} from './pod-log-reader.js';
export type {
  Masquerade,
  NetMode,
  PodApp,
  PodExit,
  PodManifest,
  PodNetwork,
  PodObituary,
  PodStarted,
  PodUser,
} from './pod-manifest.js';
export {
  appNamePattern,
  appOciConfigPath,
  defaultPidsLimit,
  findApp,
  type ImageResolver,
  ImageUnavailableError,
  type MountSpec,
  PodRuntime,
  type PrepareOptions,
  parseMemory,
  type ResolvedImage,
  type VolumeSpec,
} from './pod-runtime.js';
export {
  assertPhaseMove,
  isPodPhase,
  lockedPhases,
  type PodPhase,
  type PodState,
  phaseMoves,
  podPhases,
  podState,
  stateTable,
} from './pod-state.js';
export { type PodInfo, type PodLocation, PodStore } from './pod-store.js';
export { type SocketFileSend, type SocketFileSendError, startSocketFileSend } from './socket-file-send.js';
export { addTarEntry } from './tar-entry.js';
export { type NamedVolume, VolumeStore } from './volume-store.js';
