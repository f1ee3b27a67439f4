import type { LogTail, PodRuntime } from '../runtime/index.js';
import type { ContainerRunSpec } from './container-run-spec.js';
import type { ContainerResource, ContainerTags, ExecutorContainer } from './container-state.js';
import type { ExecutorCapacity } from './executor.js';

/**
 * What a rep (and the cell's history journal) asks of its cell's executor: the seam between the
 * rep and the containers. `Executor` (runtime pods, tested with runc) is the real one; the scale
 * harness's simulated cells (`src/testing/simulated-executor.ts`) put a simulated one below the
 * same seam, so everything above it (the rep, its HTTP API, its BBS traffic) is the real code.
 */
export interface CellExecutor {
  readonly capacity: ExecutorCapacity;
  /** Where the cell keeps its files (task output archives are staged under it). */
  readonly runtime: Pick<PodRuntime, 'dataDir'>;
  /** `container`: a container became RUNNING or COMPLETED. */
  on(event: 'container', listener: (container: ExecutorContainer) => void): unknown;
  list(): ExecutorContainer[];
  get(guid: string): ExecutorContainer | undefined;
  used(): ExecutorCapacity;
  reserve(guid: string, tags: ContainerTags, resource: ContainerResource): ExecutorContainer;
  run(guid: string, spec: ContainerRunSpec): Promise<void>;
  stopContainer(guid: string): Promise<void>;
  deleteContainer(guid: string): Promise<void>;
  readLog(guid: string, maxBytes?: number): LogTail;
  rootLayers(guid: string): string[] | undefined;
  writeSharedFile(guid: string, name: string, content: string): boolean;
  spec(guid: string): ContainerRunSpec | undefined;
}
