import { createHash } from 'node:crypto';
import type { ActualLRPState } from '../bbs/index.js';
import { BerthError } from '../core/index.js';
import { withPodSidecars } from './pod-sidecar-rules.js';
import type { SecretSpec, ServiceDefinition, SystemDefinition } from './system-definition.js';
import { containsPath } from './tree-path.js';

/** A service as it is deployed now: its definition and the DesiredLRP version running it. */
export interface DeployedService {
  readonly path: string;
  readonly version: string;
  readonly spec: ServiceDefinition;
}

/** Fields a deploy may change on the running DesiredLRP (the BBS's DesiredLRPUpdate). */
export const inPlaceFields = ['instances', 'routes', 'annotation'] as const;
/** Fields that make a new DesiredLRP version (and `secrets`, by their digests, when a service has any). */
export const versionFields = ['image', 'command', 'env', 'ports', 'monitor', 'memory_mb', 'disk_mb'] as const;

export type ServiceChange =
  | {
      readonly kind: 'create';
      readonly path: string;
      readonly version: string;
      readonly spec: ServiceDefinition;
    }
  | { readonly kind: 'unchanged'; readonly path: string; readonly version: string }
  | {
      readonly kind: 'update-in-place';
      readonly path: string;
      readonly version: string;
      readonly spec: ServiceDefinition;
      readonly changed: readonly string[];
    }
  | {
      readonly kind: 'rolling-update';
      readonly path: string;
      readonly from_version: string;
      readonly version: string;
      readonly spec: ServiceDefinition;
      readonly changed: readonly string[];
    }
  /** A service that becomes, stops being, or changes principal as a sidecar: its units cannot move, so destroy and create. */
  | {
      readonly kind: 'replace';
      readonly path: string;
      readonly from_version: string;
      readonly version: string;
      readonly spec: ServiceDefinition;
    }
  | { readonly kind: 'destroy'; readonly path: string; readonly version: string };

export interface DeployPlan {
  readonly path: string;
  readonly services: readonly ServiceChange[];
  /** Global relations as sorted [a, b] pairs. */
  readonly add_relations: readonly (readonly [string, string])[];
  readonly remove_relations: readonly (readonly [string, string])[];
}

/** The JSON of a value with its keys sorted at every level: equal values, equal text. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The DesiredLRP version of a spec: a digest of the fields that need new instances, so equal specs share it. */
export function specVersion(spec: ServiceDefinition): string {
  const picked: Record<string, unknown> = {};
  for (const f of versionFields) picked[f] = spec[f] ?? null;
  // Only when present, so the versions of services without secrets or volumes stay what they were.
  if (spec.secrets) picked.secrets = secretDigests(spec.secrets);
  if (spec.volumes) picked.volumes = spec.volumes;
  if (spec.pod_sidecars) picked.pod_sidecars = spec.pod_sidecars;
  if (spec.colocate) picked.colocate = spec.colocate;
  return createHash('sha256').update(canonical(picked)).digest('hex').slice(0, 12);
}

/**
 * A service's secrets as name → keyed digest: what a version and a definition digest are made of.
 * The ciphertext differs at every seal of the same value, so it cannot say "changed"; an unsealed
 * secret must never reach a version (it would leave the value's plain hash in a process guid).
 */
export function secretDigests(secrets: Readonly<Record<string, SecretSpec>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(secrets).map(([name, s]) => {
      if (!('digest' in s))
        throw new BerthError('internal', `secret ${name} is not sealed; only sealed secrets are planned`);
      return [name, s.digest];
    }),
  );
}

function secretsChanged(a: ServiceDefinition, b: ServiceDefinition): boolean {
  return (
    canonical(a.secrets ? secretDigests(a.secrets) : {}) !==
    canonical(b.secrets ? secretDigests(b.secrets) : {})
  );
}

function changedFields(
  a: ServiceDefinition,
  b: ServiceDefinition,
  fields: readonly (keyof ServiceDefinition)[],
): string[] {
  return fields.filter((f) => canonical(a[f] ?? null) !== canonical(b[f] ?? null));
}

function pairsOf(specs: Iterable<ServiceDefinition>): Map<string, readonly [string, string]> {
  const out = new Map<string, readonly [string, string]>();
  for (const s of specs) {
    for (const r of s.relations) {
      const pair: [string, string] = s.path < r ? [s.path, r] : [r, s.path];
      out.set(pair.join(' '), pair);
    }
  }
  return out;
}

/**
 * What a deploy of `definition` at `path` does (DESIGN.md "model"; seed 004 locks `path`
 * exclusively, so it owns that subtree). Services under `path` in the definition are created,
 * updated in place when only instances, routes or annotation changed, or rolled to a new DesiredLRP
 * version on any other change; services under `path` that the definition no longer has are
 * destroyed. Deploying at `/` therefore makes the whole system what the file says; services
 * outside `path` are left as they are, even if the file differs for them.
 */
export function planDeploy(
  current: readonly DeployedService[],
  definition: SystemDefinition,
  path = '/',
): DeployPlan {
  const inScope = (p: string) => containsPath(path, p);
  const now = new Map(current.map((c) => [c.path, c]));
  // A principal's version is made of its pod sidecars too: changing one rolls the principal.
  const wanted = withPodSidecars(definition.services).filter((s) => inScope(s.path));
  const services: ServiceChange[] = [];
  for (const spec of wanted) {
    const version = specVersion(spec);
    const old = now.get(spec.path);
    if (!old) {
      services.push({ kind: 'create', path: spec.path, version, spec });
    } else if ((old.spec.subordinate_to ?? null) !== (spec.subordinate_to ?? null)) {
      services.push({ kind: 'replace', path: spec.path, from_version: old.version, version, spec });
    } else if (version !== old.version) {
      services.push({
        kind: 'rolling-update',
        path: spec.path,
        from_version: old.version,
        version,
        spec,
        changed: [
          ...changedFields(old.spec, spec, [...versionFields, 'volumes', 'pod_sidecars', 'colocate']),
          ...(secretsChanged(old.spec, spec) ? ['secrets'] : []),
          ...changedFields(old.spec, spec, inPlaceFields),
        ],
      });
    } else {
      const changed = changedFields(old.spec, spec, inPlaceFields);
      services.push(
        changed.length > 0
          ? { kind: 'update-in-place', path: spec.path, version, spec, changed }
          : { kind: 'unchanged', path: spec.path, version },
      );
    }
  }
  const kept = new Set(wanted.map((s) => s.path));
  for (const c of current) {
    if (inScope(c.path) && !kept.has(c.path))
      services.push({ kind: 'destroy', path: c.path, version: c.version });
  }
  services.sort((a, b) => (a.path < b.path ? -1 : 1));
  // Relations touching the subtree follow the definition; the rest stay.
  const touches = ([a, b]: readonly [string, string]) => inScope(a) || inScope(b);
  const before = pairsOf(current.map((c) => c.spec));
  const after = pairsOf(definition.services);
  return {
    path,
    services,
    add_relations: [...after]
      .filter(([k, p]) => touches(p) && !before.has(k))
      .map(([, p]) => p)
      .sort(),
    remove_relations: [...before]
      .filter(([k, p]) => touches(p) && !after.has(k))
      .map(([, p]) => p)
      .sort(),
  };
}

export interface RollingInstance {
  readonly index: number;
  readonly state: ActualLRPState;
}

export interface RollingStep {
  /** The instance count to set on the new version's DesiredLRP. */
  readonly new_instances: number;
  /** Old-version indices to stop now. */
  readonly stop_old: readonly number[];
  /** True once the new version runs `desired` instances and no old one is left. */
  readonly done: boolean;
}

/**
 * One step of a rolling update (issue 8: "new instances must be RUNNING before old ones stop").
 * Policy: surge by at most `maxSurge` new instances beyond those already RUNNING; stop an old RUNNING
 * instance only when the RUNNING new ones make up for it, so the RUNNING total never falls below
 * `desired` (or below what it was, if it was already under); old instances that are not RUNNING
 * serve nothing and are stopped at once. Highest indices stop first, as Diego scales down.
 */
export function nextRollingStep(
  oldActuals: readonly RollingInstance[],
  newActuals: readonly RollingInstance[],
  desired: number,
  maxSurge = 1,
): RollingStep {
  const runningNew = newActuals.filter((i) => i.state === 'RUNNING').length;
  const oldRunning = oldActuals.filter((i) => i.state === 'RUNNING').sort((a, b) => b.index - a.index);
  const idle = oldActuals.filter((i) => i.state !== 'RUNNING').map((i) => i.index);
  const excess = Math.max(0, runningNew + oldRunning.length - desired);
  const stop = [...idle, ...oldRunning.slice(0, excess).map((i) => i.index)].sort((a, b) => a - b);
  const newInstances = Math.min(desired, Math.max(newActuals.length, runningNew + Math.max(1, maxSurge)));
  const oldLeft = oldActuals.length - stop.length;
  return { new_instances: newInstances, stop_old: stop, done: oldLeft === 0 && runningNew >= desired };
}

/**
 * One step of the stop-first roll of a service that keeps data on its cells (named volumes, as a
 * Kubernetes Deployment with `strategy: Recreate` or a one-replica StatefulSet): two versions of an
 * instance never write its volume at once, so every old instance stops before a new one starts.
 */
export function nextRecreateStep(
  oldActuals: readonly RollingInstance[],
  newActuals: readonly RollingInstance[],
  desired: number,
): RollingStep {
  if (oldActuals.length > 0)
    return { new_instances: 0, stop_old: oldActuals.map((i) => i.index).sort((a, b) => a - b), done: false };
  const runningNew = newActuals.filter((i) => i.state === 'RUNNING').length;
  return { new_instances: desired, stop_old: [], done: runningNew >= desired };
}
