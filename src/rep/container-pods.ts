import { BerthError, NotFoundError } from '../core/index.js';
import type { Executor, ExecutorContainer } from '../executor/index.js';
import type { PodInfo } from '../runtime/index.js';

/** The executor's label on a pod naming the container it runs (executor.ts writes it). */
const containerLabel = 'berth.executor.container';

/** A running container of this cell and its pod on disk: what logs and exec work on. */
export interface ContainerPod {
  readonly container: ExecutorContainer;
  readonly pod: PodInfo;
  readonly dir: string;
}

/**
 * The pod of a container (for an LRP its instance_guid, for a task its task_guid), found by the
 * label the executor writes on every pod it makes: not_found when the cell has no such container,
 * or none with a pod yet (reserved, not started).
 */
export function containerPod(executor: Executor, guid: string): ContainerPod {
  const container = executor.get(guid);
  if (!container) throw new NotFoundError('container on this cell', guid);
  for (const pod of executor.runtime.store.list()) {
    const raw = pod.manifest?.labels[containerLabel];
    if (raw === undefined || (JSON.parse(raw) as { guid?: unknown }).guid !== guid) continue;
    return { container, pod, dir: executor.runtime.store.path(pod) };
  }
  throw new BerthError('conflict', `Container ${guid} has no pod yet: it is ${container.state}`, {
    state: container.state,
  });
}

/** Like containerPod, but the container must be RUNNING now (exec): conflict otherwise. */
export function runningContainerPod(executor: Executor, guid: string): ContainerPod {
  const found = containerPod(executor, guid);
  if (found.container.state !== 'RUNNING' || found.pod.state !== 'running')
    throw new BerthError(
      'conflict',
      `Container ${guid} is not running (it is ${found.container.state}): nothing to exec into`,
      { state: found.container.state },
    );
  return found;
}
