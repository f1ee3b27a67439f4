import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Monitor, PodSidecar, SidecarMount, VolumeMount } from '../bbs/index.js';
import {
  monitorTimingProblems,
  normalizeRoutes,
  validateRoutes,
  validateVolumeMounts,
} from '../bbs/index.js';
import { findUnstorableText, InvalidArgumentError, limits, nestingDepthExceeds } from '../core/index.js';
import { colocateProblems } from './pod-sidecar-rules.js';
import type { SealedSecret } from './secret-box.js';
import { serviceVolumeProblems } from './service-volumes.js';
import {
  JobSchema,
  type RawJob,
  type RawService,
  ServiceSchema,
  TopSchema,
} from './system-definition-schema.js';
import { isTreePath } from './tree-path.js';

/** One reason a definition is refused. `path` is the service or job (or `/` for the file itself). */
export interface DefinitionProblem {
  readonly path: string;
  readonly field: string;
  readonly message: string;
}

/** Refused before anything changes, with every problem listed (issue 8). */
export class InvalidDefinitionError extends InvalidArgumentError {
  readonly problems: readonly DefinitionProblem[];

  constructor(problems: readonly DefinitionProblem[]) {
    super(
      `Cannot accept the system definition: ${problems.length} problem(s)\n${problems
        .map((p) => `  ${p.path}${p.field ? ` ${p.field}` : ''}: ${p.message}`)
        .join('\n')}`,
      { problems },
    );
    this.name = 'InvalidDefinitionError';
    this.problems = problems;
  }
}

/**
 * A secret of a service, by where it is in its life: `file` in the YAML a user writes (`berth
 * deploy` reads the file, relative to the definition, and sends its content), `value` on the wire
 * to the server (which never reads a path), `sealed` once the server has encrypted it: only that
 * form is stored, and only the sealed form is ever executed.
 */
export type SecretSpec = { readonly file: string } | { readonly value: string } | SealedSecret;

export interface ServiceDefinition {
  readonly path: string;
  readonly image: string;
  /** The whole argv; absent → the image's Entrypoint + Cmd (as in the BBS). */
  readonly command?: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Environment variables whose values are secrets; absent when there are none (older rows too). */
  readonly secrets?: Readonly<Record<string, SecretSpec>>;
  /** Sidecars have one unit per principal unit; their `instances` is that count, set at deploy. */
  readonly instances: number;
  readonly ports: readonly number[];
  readonly monitor?: Monitor;
  readonly memory_mb: number;
  readonly disk_mb: number;
  readonly routes: Readonly<Record<string, unknown>>;
  readonly annotation: string;
  /** Paths of services this one has a global relation with, sorted. */
  readonly relations: readonly string[];
  /** The principal service's path when this service is a sidecar. */
  readonly subordinate_to?: string;
  /** Volumes of each instance (service-volumes.ts); absent when none. */
  readonly volumes?: readonly VolumeMount[];
  /** A sidecar that runs in its principal's pod, mounting its principal's volumes (pod-sidecar-rules.ts). */
  readonly colocate?: 'pod';
  readonly mounts?: readonly SidecarMount[];
  /** A principal's pod sidecars, derived at deploy from its `colocate: pod` sidecars (never written). */
  readonly pod_sidecars?: readonly PodSidecar[];
}

export interface JobDefinition {
  readonly path: string;
  readonly image: string;
  readonly command?: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly memory_mb: number;
  readonly disk_mb: number;
  readonly annotation: string;
}

export interface SystemDefinition {
  readonly system: string;
  readonly services: readonly ServiceDefinition[];
  readonly jobs: readonly JobDefinition[];
}

export const definitionDefaults = { instances: 1, memory_mb: 128, disk_mb: 1024 } as const;

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

function schemaProblems(schema: TSchema, value: unknown, path: string): DefinitionProblem[] {
  const out: DefinitionProblem[] = [];
  for (const e of Value.Errors(schema, value)) {
    const parts = e.path
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    const field = parts.join('.');
    if (parts[0] === 'secrets' && parts.length === 2 && e.message === 'Expected union value') {
      out.push({ path, field, message: 'must be {file: PATH} (or {value: TEXT} over the API)' });
    } else if (parts[0] === 'monitor' && parts.length === 1 && e.message === 'Expected union value') {
      out.push({
        path,
        field,
        message:
          'must be one of {tcp: PORT}, {http: {port: PORT, path: /…}}, {command: [argv]}, with optional timeout_ms, period_ms, failure_threshold, startup_grace_ms (integers)',
      });
    } else if (parts[0] === 'volumes' && parts[2] === 'kind' && e.message === 'Expected union value') {
      out.push({ path, field, message: "must be named or empty (a cell's host paths are not offered)" });
    } else if (e.message === 'Unexpected property') {
      out.push({ path, field, message: 'unknown field' });
    } else if (e.value === undefined && e.message.startsWith('Expected')) {
      out.push({ path, field, message: 'required' });
    } else {
      out.push({ path, field, message: e.message.toLowerCase() });
    }
  }
  // A union reports each branch and then itself; the one line above says it all.
  return out.filter((p, i) => out.findIndex((q) => q.path === p.path && q.field === p.field) === i);
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/**
 * Validates a parsed definition: shape (TypeBox, every error), then the references between entries.
 * Returns the normalized definition (defaults filled in, sorted by path) or every problem found.
 */
export function validateSystemDefinition(
  value: unknown,
):
  | { readonly ok: true; readonly definition: SystemDefinition }
  | { readonly ok: false; readonly problems: DefinitionProblem[] } {
  const problems: DefinitionProblem[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      ok: false,
      problems: [{ path: '/', field: '', message: 'must be a mapping with system, services, jobs' }],
    };
  }
  // What the schemas cannot say, checked before they walk the value (YAML has no depth limit).
  if (nestingDepthExceeds(value, limits.maxJsonDepth)) {
    return {
      ok: false,
      problems: [{ path: '/', field: '', message: `nests deeper than ${limits.maxJsonDepth} levels` }],
    };
  }
  const badText = findUnstorableText(value);
  if (badText) return { ok: false, problems: [{ path: '/', field: badText.field, message: badText.reason }] };
  problems.push(...schemaProblems(TopSchema, value, '/'));
  const top = value as Record<string, unknown>;
  const rawServices = asRecord(top.services);
  const rawJobs = asRecord(top.jobs);
  const services = new Map<string, RawService>();
  const jobs = new Map<string, RawJob>();
  for (const [section, raws, schema] of [
    ['services', rawServices, ServiceSchema],
    ['jobs', rawJobs, JobSchema],
  ] as const) {
    for (const [path, raw] of Object.entries(raws)) {
      if (path === '/' || !isTreePath(path)) {
        problems.push({
          path: path.slice(0, 64),
          field: '',
          message: `${section} keys are paths like /web/api (lower-case segments)`,
        });
        continue;
      }
      if (path.length > limits.maxTreePathLength) {
        // The path becomes the service's process guid (with the system and a version): it must fit.
        problems.push({
          path: `${path.slice(0, 64)}…`,
          field: '',
          message: `a path is at most ${limits.maxTreePathLength} characters`,
        });
        continue;
      }
      const found = schemaProblems(schema, raw, path);
      problems.push(...found);
      if (found.length === 0) {
        if (section === 'services') services.set(path, raw as RawService);
        else jobs.set(path, raw as RawJob);
      }
      problems.push(...envNameProblems(path, asRecord(raw)));
    }
  }
  for (const path of Object.keys(rawJobs)) {
    if (path in rawServices)
      problems.push({ path, field: '', message: 'declared both as a service and as a job' });
  }
  for (const [path, svc] of services) problems.push(...referenceProblems(path, svc, rawServices, rawJobs));
  problems.push(...cycleProblems(services));
  problems.push(...sizeProblems(services));
  if (problems.length > 0) return { ok: false, problems };
  const normalized = [...services]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([path, s]) => normalizeService(path, s));
  problems.push(...colocateProblems(normalized));
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    definition: {
      system: top.system as string,
      services: normalized,
      jobs: [...jobs].sort(([a], [b]) => (a < b ? -1 : 1)).map(([path, j]) => normalizeJob(path, j)),
    },
  };
}

/** Env and secret names are variable names, and one name is either a plain variable or a secret. */
function envNameProblems(path: string, raw: Record<string, unknown>): DefinitionProblem[] {
  const out: DefinitionProblem[] = [];
  const env = asRecord(raw.env);
  for (const field of ['env', 'secrets'] as const) {
    for (const key of Object.keys(asRecord(raw[field]))) {
      if (!envName.test(key) || key.length > limits.maxNameLength)
        out.push({ path, field: `${field}.${key.slice(0, 64)}`, message: 'not a valid variable name' });
      else if (field === 'secrets' && key in env)
        out.push({
          path,
          field: `secrets.${key}`,
          message: `${key} is also in env: a variable is one or the other`,
        });
    }
  }
  return out;
}

function referenceProblems(
  path: string,
  svc: RawService,
  rawServices: Record<string, unknown>,
  rawJobs: Record<string, unknown>,
): DefinitionProblem[] {
  const out: DefinitionProblem[] = [];
  const target = (field: string, to: string, what: string) => {
    if (to === path) out.push({ path, field, message: `${what} itself` });
    else if (to in rawJobs && !(to in rawServices))
      out.push({ path, field, message: `${to} is a job, not a service` });
    else if (!(to in rawServices))
      out.push({ path, field, message: `${to} is not a service of this system` });
    else return true;
    return false;
  };
  const seen = new Set<string>();
  for (const to of svc.relations ?? []) {
    if (seen.has(to)) out.push({ path, field: 'relations', message: `${to} is listed twice` });
    seen.add(to);
    target('relations', to, 'relates to');
  }
  if (svc.subordinate_to !== undefined) {
    if (target('subordinate_to', svc.subordinate_to, 'is subordinate to')) {
      if (svc.instances !== undefined) {
        out.push({
          path,
          field: 'instances',
          message: 'a sidecar has one unit per principal unit; drop instances',
        });
      }
    }
  }
  const ports = svc.ports ?? [];
  const dup = ports.filter((p, i) => ports.indexOf(p) !== i);
  for (const p of new Set(dup)) out.push({ path, field: 'ports', message: `port ${p} is listed twice` });
  const monitorPort =
    svc.monitor && 'tcp' in svc.monitor
      ? svc.monitor.tcp
      : svc.monitor && 'http' in svc.monitor
        ? svc.monitor.http.port
        : undefined;
  if (monitorPort !== undefined && !ports.includes(monitorPort)) {
    out.push({ path, field: 'monitor', message: `port ${monitorPort} is not in ports` });
  }
  if (svc.monitor) for (const problem of monitorTimingProblems(svc.monitor)) out.push({ path, ...problem });
  out.push(...serviceVolumeProblems(path, svc));
  return out;
}

/**
 * What one deploy may write: every unit is a model row and an ActualLRP, so the units of a system
 * (a sidecar has one per principal unit) are bounded, and so is each service's routes JSON.
 */
function sizeProblems(services: ReadonlyMap<string, RawService>): DefinitionProblem[] {
  const out: DefinitionProblem[] = [];
  let units = 0;
  for (const [path, svc] of services) {
    const principal = svc.subordinate_to !== undefined ? services.get(svc.subordinate_to) : svc;
    units += principal?.instances ?? definitionDefaults.instances;
    if (svc.routes !== undefined) {
      try {
        validateRoutes(normalizeRoutes(svc.routes), svc.ports ?? []);
      } catch (err) {
        // The field names the route entry (routes.http[0].hostname) when one is wrong.
        const field = err instanceof InvalidArgumentError ? String(err.details.field ?? 'routes') : 'routes';
        out.push({ path, field, message: (err as Error).message.replace(/^\S+ /, '') });
      }
    }
  }
  if (units > limits.maxSystemUnits) {
    out.push({
      path: '/',
      field: 'services',
      message: `${units} units in all (sidecar units included); a system holds at most ${limits.maxSystemUnits}`,
    });
  }
  return out;
}

/**
 * Sidecars of sidecars are refused (Juju: a subordinate's principal is never a subordinate), and a
 * chain that loops is reported as the cycle it is, on every member.
 */
function cycleProblems(services: ReadonlyMap<string, RawService>): DefinitionProblem[] {
  const out: DefinitionProblem[] = [];
  for (const [path, svc] of services) {
    const to = svc.subordinate_to;
    if (to === undefined || to === path || !services.has(to)) continue;
    const chain = [path];
    let at: string | undefined = to;
    while (at !== undefined && !chain.includes(at) && services.has(at)) {
      chain.push(at);
      at = services.get(at)?.subordinate_to;
    }
    if (at === path) {
      out.push({ path, field: 'subordinate_to', message: `cycle: ${[...chain, at].join(' → ')}` });
    } else if (services.get(to)?.subordinate_to !== undefined) {
      out.push({ path, field: 'subordinate_to', message: `${to} is itself a sidecar` });
    }
  }
  return out;
}

function normalizeService(path: string, s: RawService): ServiceDefinition {
  return {
    path,
    image: s.image,
    ...(s.command ? { command: s.command } : {}),
    env: s.env ?? {},
    ...(s.secrets && Object.keys(s.secrets).length > 0 ? { secrets: s.secrets } : {}),
    instances: s.instances ?? definitionDefaults.instances,
    ports: s.ports ?? [],
    ...(s.monitor ? { monitor: s.monitor } : {}),
    memory_mb: s.memory_mb ?? definitionDefaults.memory_mb,
    disk_mb: s.disk_mb ?? definitionDefaults.disk_mb,
    routes: normalizeRoutes(s.routes ?? {}),
    annotation: s.annotation ?? '',
    relations: [...new Set(s.relations ?? [])].sort(),
    ...(s.subordinate_to !== undefined ? { subordinate_to: s.subordinate_to } : {}),
    ...(s.volumes !== undefined && s.volumes.length > 0
      ? { volumes: validateVolumeMounts(s.volumes) ?? [] }
      : {}),
    ...(s.colocate !== undefined ? { colocate: s.colocate } : {}),
    ...(s.mounts !== undefined && s.mounts.length > 0 ? { mounts: s.mounts } : {}),
  };
}

function normalizeJob(path: string, j: RawJob): JobDefinition {
  return {
    path,
    image: j.image,
    ...(j.command ? { command: j.command } : {}),
    env: j.env ?? {},
    memory_mb: j.memory_mb ?? definitionDefaults.memory_mb,
    disk_mb: j.disk_mb ?? definitionDefaults.disk_mb,
    annotation: j.annotation ?? '',
  };
}

/**
 * The problems of a definition already accepted and stored (a deploy resumed after a restart, maybe
 * written by an older berth with looser rules): the normalized form is turned back into the raw
 * one and checked by the same rules, so what would be refused today is never executed.
 */
export function storedDefinitionProblems(definition: SystemDefinition): DefinitionProblem[] {
  try {
    const raw = {
      system: definition.system,
      services: Object.fromEntries(
        definition.services.map(({ path, instances, relations, subordinate_to, ...rest }) => [
          path,
          {
            ...rest,
            ...(subordinate_to !== undefined ? { subordinate_to } : { instances }),
            ...(relations.length > 0 ? { relations } : {}),
          },
        ]),
      ),
      jobs: Object.fromEntries(definition.jobs.map(({ path, ...rest }) => [path, rest])),
    };
    const result = validateSystemDefinition(raw);
    return result.ok ? [] : result.problems;
  } catch (err) {
    return [{ path: '/', field: '', message: `unreadable stored definition: ${(err as Error).message}` }];
  }
}
