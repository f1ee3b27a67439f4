import { createHash } from 'node:crypto';
import { namedVolumes, type VolumeMount, validateVolumeMounts, volumeLimits } from '../bbs/index.js';
import { InvalidArgumentError } from '../core/index.js';

/** A problem of a definition (system-definition.ts's DefinitionProblem, which this module must not import). */
interface VolumeProblem {
  readonly path: string;
  readonly field: string;
  readonly message: string;
}

/**
 * The volumes of a system's service (issue 23): the BBS's volumes (`named` kept on the cell per
 * instance index, `empty` per container; never a host path), written in the definition as a list
 * under `volumes`. A named volume's data outlives the service's versions: a redeploy finds it on
 * the cell its instance is pinned to, and rolls the service stop-first (deploy-plan.ts).
 */

/** Characters of a service's volume name, leaving room for the service's scope (`desiredVolumes`). */
export const maxServiceVolumeName = volumeLimits.maxNameLength - 7;

/** What is wrong with a service's `volumes`, each naming its field (`volumes[0].target`). */
export function serviceVolumeProblems(
  path: string,
  svc: { readonly volumes?: readonly VolumeMount[]; readonly subordinate_to?: string },
): VolumeProblem[] {
  if (svc.volumes === undefined) return [];
  const problems: VolumeProblem[] = [];
  try {
    validateVolumeMounts(svc.volumes);
  } catch (err) {
    if (!(err instanceof InvalidArgumentError)) throw err;
    const field = String(err.details.field ?? 'volumes');
    problems.push({ path, field, message: err.message.replace(/^Invalid \S+: /, '') });
  }
  svc.volumes.forEach((v, i) => {
    if (typeof v.name === 'string' && v.name.length > maxServiceVolumeName)
      problems.push({
        path,
        field: `volumes[${i}].name`,
        message: `at most ${maxServiceVolumeName} characters`,
      });
    if (v.kind === 'named' && svc.subordinate_to !== undefined)
      problems.push({
        path,
        field: `volumes[${i}].kind`,
        message: 'a sidecar keeps no named volume (its units come and go with their principal); use empty',
      });
  });
  return problems;
}

/**
 * A service's volumes as its DesiredLRPs carry them: each name scoped by the service's path, so
 * two services of one system (one BBS domain) never share a volume, while every version of one
 * service does.
 */
export function desiredVolumes(path: string, volumes: readonly VolumeMount[]): VolumeMount[] {
  return volumes.map((v) => ({ ...v, name: scopedVolumeName(path, v.name) }));
}

/** The name a service's volume has in its DesiredLRPs: `<name>.<hash of the service path>`. */
export function scopedVolumeName(path: string, name: string): string {
  return `${name}.${createHash('sha256').update(path).digest('hex').slice(0, 6)}`;
}

/** A service whose instances keep data on their cells: it is rolled stop-first. */
export function keepsData(spec: { readonly volumes?: readonly VolumeMount[] }): boolean {
  return namedVolumes(spec.volumes).length > 0;
}
