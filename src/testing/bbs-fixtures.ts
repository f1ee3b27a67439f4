import type { DesiredLRPDefinition } from '../bbs/index.js';

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
