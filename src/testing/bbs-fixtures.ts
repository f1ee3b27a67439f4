import assert from 'node:assert/strict';
import type { ActualLRP, BbsStore, DesiredLRPDefinition, TaskDefinition } from '../bbs/index.js';

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

/** The address and port mapping `startOn` reports for an instance. */
export const instanceNet = { address: '10.0.0.5', ports: [{ container_port: 8080, host_port: 61001 }] };

/** An LRP's instance (not its `/evacuating` copy) at `index`; fails the test when there is none. */
export async function instanceOf(store: BbsStore, processGuid: string, index: number): Promise<ActualLRP> {
  const group = await store.getActualLRP({ process_guid: processGuid, index });
  assert.ok(group.instance);
  return group.instance;
}

/**
 * Starts an UNCLAIMED instance on `cellId` straight away (a CAS on the tag it has now), as
 * instance `ig-CELL` at `instanceNet`.
 */
export async function startOn(
  store: BbsStore,
  processGuid: string,
  index: number,
  cellId: string,
): Promise<ActualLRP> {
  const a = await instanceOf(store, processGuid, index);
  return store.startActualLRP({
    process_guid: processGuid,
    index,
    expected: a.modification_tag,
    instance_key: { instance_guid: `ig-${cellId}`, cell_id: cellId },
    net_info: instanceNet,
  });
}
