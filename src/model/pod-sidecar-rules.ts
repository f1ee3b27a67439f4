import { mainAppName, type PodSidecar, type SidecarMount } from '../bbs/index.js';
import { mountTargetProblem, plainMountTarget } from '../core/index.js';
import { scopedVolumeName } from './service-volumes.js';

/**
 * Sidecars in their principal's pod (issue 23, `colocate: pod`): a subordinate service whose units
 * run as more apps of its principal's instance pods instead of as their own LRPs pinned beside
 * them, as a Kubernetes sidecar container: same network (it reaches the principal on 127.0.0.1),
 * started, stopped and restarted with it. The principal's DesiredLRP carries them (`sidecars`),
 * so a change of either rolls the principal.
 */

/** What a service needs here (a structural slice of ServiceDefinition, which imports this module's users). */
interface SidecarSpec {
  readonly path: string;
  readonly image: string;
  readonly command?: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly subordinate_to?: string;
  readonly colocate?: 'pod';
  readonly ports: readonly number[];
  readonly monitor?: unknown;
  readonly secrets?: unknown;
  readonly volumes?: readonly { readonly name: string }[];
  readonly mounts?: readonly SidecarMount[];
  readonly routes: Readonly<Record<string, unknown>>;
}

interface Problem {
  readonly path: string;
  readonly field: string;
  readonly message: string;
}

/** A pod sidecar's app name: its path's last segment (`/web/log-ship` → `log-ship`). */
export function podSidecarName(path: string): string {
  return (path.split('/').pop() ?? '').slice(0, 30);
}

/** Why a `colocate` cannot be, for every service of a definition. */
export function colocateProblems(services: readonly SidecarSpec[]): Problem[] {
  const out: Problem[] = [];
  const names = new Map<string, string>();
  for (const s of services) {
    const problem = (field: string, message: string) => out.push({ path: s.path, field, message });
    if (s.mounts !== undefined && s.colocate === undefined)
      problem('mounts', 'only a pod sidecar (colocate: pod) mounts its principal’s volumes');
    if (s.colocate === undefined) continue;
    if (s.subordinate_to === undefined) {
      problem('colocate', 'only a sidecar (subordinate_to) shares its principal’s pod');
      continue;
    }
    if (s.ports.length > 0)
      problem('ports', 'a pod sidecar listens in its principal’s pod, whose ports it has');
    if (s.monitor !== undefined) problem('monitor', 'a pod sidecar is watched with its principal');
    if (s.secrets !== undefined) problem('secrets', 'a pod sidecar takes env only');
    if ((s.volumes ?? []).length > 0) problem('volumes', 'a pod sidecar has no volumes of its own');
    if (Object.keys(s.routes).length > 0) problem('routes', 'a pod sidecar has no routes of its own');
    const principal = services.find((p) => p.path === s.subordinate_to);
    const targets = new Set<string>();
    (s.mounts ?? []).forEach((m, i) => {
      if (!(principal?.volumes ?? []).some((v) => v.name === m.volume))
        problem(`mounts[${i}].volume`, `${s.subordinate_to} has no volume "${m.volume}"`);
      const bad = mountTargetProblem(m.target);
      if (bad !== undefined) problem(`mounts[${i}].target`, bad);
      else if (targets.has(plainMountTarget(m.target)))
        problem(`mounts[${i}].target`, `two mounts at ${plainMountTarget(m.target)}`);
      targets.add(plainMountTarget(m.target));
    });
    const name = podSidecarName(s.path);
    const key = `${s.subordinate_to}\u0000${name}`;
    if (name === mainAppName)
      problem('colocate', `"${mainAppName}" is the name of the principal's app in the pod`);
    else if (names.has(key))
      problem('colocate', `${names.get(key)} is also named "${name}" in the pod of ${s.subordinate_to}`);
    names.set(key, s.path);
  }
  return out;
}

/**
 * The definition's principals with their pod sidecars (`pod_sidecars`, sorted by path): what their
 * DesiredLRPs run and what their versions are made of.
 */
export function withPodSidecars<T extends SidecarSpec & { readonly pod_sidecars?: readonly PodSidecar[] }>(
  services: readonly T[],
): T[] {
  return services.map((s) => {
    const sidecars = services
      .filter((c) => c.colocate === 'pod' && c.subordinate_to === s.path)
      .map(
        (c): PodSidecar => ({
          name: podSidecarName(c.path),
          service: c.path,
          image: c.image,
          ...(c.command ? { command: c.command } : {}),
          env: c.env,
          // The principal's DesiredLRP names its volumes scoped by its path (service-volumes.ts).
          ...(c.mounts
            ? { mounts: c.mounts.map((m) => ({ ...m, volume: scopedVolumeName(s.path, m.volume) })) }
            : {}),
        }),
      );
    return sidecars.length > 0 ? { ...s, pod_sidecars: sidecars } : s;
  });
}
