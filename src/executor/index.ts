export type { CellExecutor } from './cell-executor.js';
export { type ContainerRunSpec, sharedDirPath } from './container-run-spec.js';
export {
  assertContainerTransition,
  type ContainerResource,
  type ContainerResult,
  type ContainerState,
  type ContainerTags,
  canTransitionContainer,
  containerStates,
  containerTransitions,
  type ExecutorContainer,
  type LRPContainerTags,
  type TaskContainerTags,
} from './container-state.js';
export { Executor, type ExecutorCapacity, type ExecutorOptions } from './executor.js';
export {
  type CollectedOutputs,
  collectTaskOutputs,
  OutputCollectionError,
  type OutputCollectionLimits,
} from './task-outputs.js';
