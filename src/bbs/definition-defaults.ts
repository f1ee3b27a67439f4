import { InvalidArgumentError, limits } from '../core/index.js';
import type { DesiredLRPDefinition } from './bbs-store.js';
import type { Monitor, TaskDefinition } from './bbs-types.js';
import { normalizeRoutes, validateHttpRoutes } from './http-routes.js';
import { monitorTimingOf, validateMonitorTiming } from './monitor-timing.js';
import { validatePodSidecars } from './pod-sidecars.js';
import { validateTaskOutputs } from './task-output-types.js';
import { validateVolumeMounts } from './volume-mounts.js';

/**
 * The store's own defaults and bounds for what it is asked to desire. The HTTP schemas refuse
 * most bad input first, but the internal routes hand a schema-valid body straight to the store
 * and in-process callers (the system deployer) skip HTTP: this is the one place both backends
 * meet, so an optional field left out is stored as its default on SQLite and PostgreSQL alike
 * (never a NOT NULL violation), and no caller can desire past a bound.
 */
export function desiredWithDefaults(
  req: DesiredLRPDefinition,
): DesiredLRPDefinition & { readonly routes: Readonly<Record<string, unknown>> } {
  // Over HTTP's internal route the optional fields may be absent whatever the type says.
  const given = Object.fromEntries(
    Object.entries(req).filter(([, v]) => v !== undefined),
  ) as Partial<DesiredLRPDefinition> &
    Pick<DesiredLRPDefinition, 'process_guid' | 'domain' | 'instances' | 'image'>;
  const monitor = given.monitor !== undefined ? withMonitorDefaults(given.monitor) : undefined;
  const { volumes: asked, sidecars, ...rest } = given;
  const volumes = validateVolumeMounts(asked);
  validatePodSidecars(sidecars, volumes);
  const desired = {
    ...rest,
    env: given.env ?? {},
    memory_mb: given.memory_mb ?? 0,
    disk_mb: given.disk_mb ?? 0,
    ports: given.ports ?? [],
    routes: normalizeRoutes(given.routes ?? {}),
    annotation: given.annotation ?? '',
    start_timeout_s: given.start_timeout_s ?? 60,
    placement_tags: given.placement_tags ?? [],
    ...(monitor !== undefined ? { monitor } : {}),
    ...(volumes !== undefined && volumes.length > 0 ? { volumes } : {}),
    ...(sidecars !== undefined && sidecars.length > 0 ? { sidecars } : {}),
  };
  validateInstances(desired.instances);
  validateRoutes(desired.routes, desired.ports);
  return desired;
}

export function taskWithDefaults(req: TaskDefinition): TaskDefinition {
  const given = Object.fromEntries(
    Object.entries(req).filter(([, v]) => v !== undefined),
  ) as Partial<TaskDefinition> & Pick<TaskDefinition, 'task_guid' | 'domain' | 'image'>;
  validateTaskOutputs(given.outputs, given.outputs_max_bytes);
  const { volumes: asked, ...rest } = given;
  const volumes = validateVolumeMounts(asked);
  return {
    ...rest,
    ...(volumes !== undefined && volumes.length > 0 ? { volumes } : {}),
    env: given.env ?? {},
    memory_mb: given.memory_mb ?? 0,
    disk_mb: given.disk_mb ?? 0,
    result_file: given.result_file ?? '',
    completion_callback_url: given.completion_callback_url ?? '',
    placement_tags: given.placement_tags ?? [],
  };
}

export function withMonitorDefaults(monitor: Monitor): Monitor {
  validateMonitorTiming(monitor);
  if ('http' in monitor)
    return {
      http: { port: monitor.http.port, path: monitor.http.path ?? '/' },
      ...monitorTimingOf(monitor),
    };
  return monitor;
}

export function validateInstances(instances: number): void {
  if (!Number.isInteger(instances) || instances < 0 || instances > limits.maxInstances) {
    throw new InvalidArgumentError(
      `instances must be an integer from 0 to ${limits.maxInstances}, got ${instances}`,
      { field: 'instances', limit: limits.maxInstances },
    );
  }
}

/**
 * Diego's rule: the routes of one LRP are at most 128 KiB of JSON. With the LRP's `ports`, its
 * HTTP routes are checked too (DNS hostnames, exposed ports: http-routes.ts).
 */
export function validateRoutes(routes: Readonly<Record<string, unknown>>, ports?: readonly number[]): void {
  let size: number;
  try {
    size = Buffer.byteLength(JSON.stringify(routes));
  } catch {
    // Too deep for JSON.stringify's recursion (or a cycle): certainly nothing a router reads.
    size = Number.POSITIVE_INFINITY;
  }
  if (size > limits.maxRoutesBytes) {
    throw new InvalidArgumentError(`routes must be at most ${limits.maxRoutesBytes} bytes of JSON`, {
      field: 'routes',
      limit: limits.maxRoutesBytes,
    });
  }
  if (ports !== undefined) validateHttpRoutes(routes, ports);
}
