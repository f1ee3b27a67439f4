import type { DesiredLRPDefinition, TaskDefinition } from '../bbs/index.js';

/** A small valid DesiredLRP definition (domain `d`, one port, no limits that matter), with `extra` on top. */
export function desiredDefinition(
  processGuid: string,
  instances: number,
  extra: Partial<DesiredLRPDefinition> = {},
): DesiredLRPDefinition {
  return {
    process_guid: processGuid,
    domain: 'd',
    instances,
    image: 'busybox',
    env: {},
    memory_mb: 64,
    disk_mb: 0,
    ports: [8080],
    routes: {},
    annotation: '',
    start_timeout_s: 60,
    placement_tags: [],
    ...extra,
  };
}

/** A small valid task definition (domain `d`, busybox), with `extra` on top. */
export function desiredTask(taskGuid: string, extra: Partial<TaskDefinition> = {}): TaskDefinition {
  return {
    task_guid: taskGuid,
    domain: 'd',
    image: 'busybox',
    env: {},
    memory_mb: 32,
    disk_mb: 0,
    result_file: '',
    completion_callback_url: '',
    placement_tags: [],
    ...extra,
  };
}
