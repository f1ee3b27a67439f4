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
export {
  type ContainerRunSpec,
  Executor,
  type ExecutorCapacity,
  type ExecutorOptions,
  sharedDirPath,
} from './executor.js';
