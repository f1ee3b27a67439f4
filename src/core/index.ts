export { isNotFound, isSuperseded, orAbsent, supersededCodes } from './absence.js';
export { writeFileAtomic } from './atomic-write.js';
export {
  BerthError,
  berthErrorFromHttp,
  codeForHttpStatus,
  type ErrorCode,
  errnoCode,
  exitCodeByCode,
  httpStatusByCode,
  IllegalTransitionError,
  InvalidArgumentError,
  isBerthError,
  NotFoundError,
} from './berth-error.js';
export {
  ArgString,
  Argv,
  DiskMb,
  DurationMs,
  EnvMap,
  ExitCode,
  ImageRef,
  InstanceIndex,
  Instances,
  Int32,
  MemoryMb,
  Message,
  Name,
  NameOrEmpty,
  PageQuery,
  PageQueryFields,
  PlacementTags,
  Routes,
  Url,
} from './bounded-schemas.js';
export { settledWithin } from './bounded-wait.js';
export {
  type CallbackTargetPolicy,
  checkCallbackUrl,
  privateAddressKind,
  refusedCallbackTarget,
} from './callback-target.js';
export { ConcurrencyGate } from './concurrency-gate.js';
export { DirWatch } from './dir-watch.js';
export { formatDuration, parseDuration } from './duration.js';
export { redactEnv, redactedEnvValue } from './env-redaction.js';
export {
  checkTerminalSize,
  type ExecChannel,
  execChannel,
  execFrame,
  parseExecFrame,
} from './exec-channels.js';
export {
  describeFetchError,
  HttpJsonClient,
  type HttpJsonClientOptions,
  type HttpJsonRequest,
  type HttpTransport,
  type PeerClientOptions,
  PeerUnreachableError,
  type QueryValues,
  type SendBodyRequest,
  type ServerUrls,
  setDefaultHttpTransport,
  splitServerUrls,
} from './http-json-client.js';
export {
  type HttpMethod,
  type HttpOperation,
  httpOperation,
  type OperationAnswer,
  type OperationArgs,
  operationPath,
  type QueryArgs,
  type QueryOf,
  type Sendable,
} from './http-operation.js';
export { isStorableText, jsonNestingDepth, limits, textPattern } from './limits.js';
export {
  decodeCursor,
  defaultPageSize,
  encodeCursor,
  isString,
  maxPageSize,
  pageOfWhole,
  parsePageLimit,
  toPage,
} from './list-page.js';
export { listenBacklog } from './listen-backlog.js';
export { ensurePrivateDir } from './private-dir.js';
export { procStatFields } from './proc-stat.js';
export { removeTree } from './remove-tree.js';
export {
  findUnstorableText,
  installRequestGuards,
  isUnchangedRequest,
  markUnchanged,
  nestingDepthExceeds,
  type UnstorableText,
} from './request-guards.js';
export {
  Backoff,
  type BackoffPolicy,
  backoffDelayMs,
  describeError,
  forEachLimited,
  LocalLoop,
  type LoopOptions,
  type RoundOutcome,
  runLoop,
  type ServiceLogger,
  type SingletonContext,
  silentLogger,
  sleep,
  type WakeReason,
  Wakeup,
} from './service-loop.js';
export { sseBlocks, sseData } from './sse-blocks.js';
export {
  mountTargetProblem,
  plainMountTarget,
  reservedMountTargets,
  volumeNamePattern,
} from './volume-rules.js';
