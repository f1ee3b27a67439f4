import { createHash } from 'node:crypto';
import { actualLrpKey } from '../bbs/index.js';
import type { JobDefinition } from './system-definition.js';

/**
 * Every name a system's things carry, formatted and parsed in one place: the BBS domain of a
 * system, the model's service and unit names, the process guid of a service version, a sidecar
 * unit's own LRP and a job's task guid. Code elsewhere asks these functions instead of slicing
 * strings, so a change of spelling is one edit and a foreign name is rejected the same way
 * everywhere.
 *
 *   domain          system-<system>
 *   model service   <system>:<path>                  shop:/web/api
 *   model unit      <service>#<index>                shop:/web/api#2
 *   process guid    <system>.<seg>.<seg>.<version>   shop.web.api.0f3a…
 *   sidecar unit    <process guid>.u<index>          shop.log.0f3a….u3
 *   job task guid   <system>.<seg>.<job version>
 */

const domainPrefix = 'system-';

/** The BBS domain of a system's DesiredLRPs and tasks: status and teardown list by it. */
export function systemDomain(system: string): string {
  return `${domainPrefix}${system}`;
}

/** The system a BBS domain belongs to, or undefined for a domain that is not a system's. */
export function systemOfDomain(domain: string): string | undefined {
  return domain.startsWith(domainPrefix) && domain.length > domainPrefix.length
    ? domain.slice(domainPrefix.length)
    : undefined;
}

/** `shop` + `/web/api` → the model's service name. */
export function modelServiceName(system: string, path: string): string {
  return `${system}:${path}`;
}

/** Whether a model service name belongs to a system (`shop:/x` does, `shopping:/x` does not). */
export function isServiceOf(system: string, modelName: string): boolean {
  return modelName.startsWith(`${system}:`);
}

/** A model service name's path inside its system, or undefined for another system's name. */
export function servicePathOf(system: string, modelName: string): string | undefined {
  return isServiceOf(system, modelName) ? modelName.slice(system.length + 1) : undefined;
}

/**
 * The systems a model name belongs to: a service's (`shop:/web`) or unit's (`shop:/web#2`) one, a
 * relation id's (`shop:/a shop:/b`) one or two; none for a cell's or any other name.
 */
export function systemsOfModelName(name: string): string[] {
  const systems = new Set<string>();
  for (const part of name.split(' ')) {
    const colon = part.indexOf(':');
    if (colon > 0) systems.add(part.slice(0, colon));
  }
  return [...systems];
}

/** A model name as a system's user reads it: its path inside the system, a foreign name unchanged. */
export function systemLabel(system: string, modelName: string): string {
  return servicePathOf(system, modelName) ?? modelName;
}

/** A service's unit `index`: unit = instance index. */
export function unitName(service: string, index: number): string {
  return `${service}#${index}`;
}

/** `shop:/web/api#2` → its service and index; undefined for a name that is not a unit's. */
export function parseUnitName(
  name: string,
): { readonly service: string; readonly index: number } | undefined {
  const hash = name.lastIndexOf('#');
  if (hash <= 0) return undefined;
  const index = name.slice(hash + 1);
  if (!/^\d+$/.test(index)) return undefined;
  return { service: name.slice(0, hash), index: Number(index) };
}

/** A unit as its system's user reads it: `shop:/web/api#2` → `/web/api#2`. */
export function unitLabel(system: string, name: string): string {
  const unit = parseUnitName(name);
  return unit ? unitName(systemLabel(system, unit.service), unit.index) : systemLabel(system, name);
}

/**
 * A DesiredLRP per service version: `system.seg.seg.version`. Segments never contain a dot, so
 * `/a-b` and `/a/b` cannot collide.
 */
export function serviceProcessGuid(system: string, path: string, version: string): string {
  return `${system}.${path.slice(1).replaceAll('/', '.')}.${version}`;
}

/** A sidecar unit's own DesiredLRP: one instance pinned to its principal's cell. */
export function sidecarUnitGuid(base: string, index: number): string {
  return `${base}.u${index}`;
}

/** The unit index of a sidecar unit's LRP of service version `base`, or undefined when it is not one. */
export function sidecarUnitIndex(base: string, processGuid: string): number | undefined {
  const prefix = `${base}.u`;
  if (!processGuid.startsWith(prefix)) return undefined;
  const index = processGuid.slice(prefix.length);
  return /^\d+$/.test(index) ? Number(index) : undefined;
}

/** A job's version: a digest of its definition, so a changed job is a new task. */
export function jobVersion(job: JobDefinition): string {
  return createHash('sha256').update(JSON.stringify(job)).digest('hex').slice(0, 12);
}

/** The task guid of a job at its current definition. */
export function jobTaskGuid(system: string, job: JobDefinition): string {
  return serviceProcessGuid(system, job.path, jobVersion(job));
}

/** A key for one instance of a process guid (maps of instances by unit): the BBS's one spelling. */
export function instanceKey(processGuid: string, index: number): string {
  return actualLrpKey({ process_guid: processGuid, index });
}

/**
 * The model unit an instance belongs to, from its guid alone (so it answers before the service
 * row is written): `shop.web.api.<version>` index i → `shop:/web/api#i`; a sidecar unit's own
 * LRP `shop.log.<version>.u3` → `shop:/log#3`. Versions are hex, so never `u<digits>`.
 */
export function unitOfInstance(system: string, processGuid: string, index: number): string | undefined {
  if (!processGuid.startsWith(`${system}.`)) return undefined;
  const parts = processGuid.slice(system.length + 1).split('.');
  let unitIndex = index;
  const last = parts.at(-1) ?? '';
  if (/^u\d+$/.test(last)) {
    unitIndex = Number(last.slice(1));
    parts.pop();
  }
  parts.pop();
  return parts.length === 0
    ? undefined
    : unitName(modelServiceName(system, `/${parts.join('/')}`), unitIndex);
}
