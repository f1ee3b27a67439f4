import { Type } from '@sinclair/typebox';
import {
  Argv,
  EnvMap,
  ImageRef,
  InvalidArgumentError,
  mountTargetProblem,
  plainMountTarget,
} from '../core/index.js';
import type { VolumeMount } from './volume-mounts.js';

/**
 * A sidecar container in an LRP instance's pod (issue 23, Kubernetes' sidecar containers): a
 * second app of the same runtime pod, with its own image, argv and env, sharing the pod's network
 * (it reaches the main app on 127.0.0.1), IPC and UTS namespaces and /etc/hosts. The instance's
 * pod ends when any of its apps exits, so a crashed sidecar crashes the instance, which restarts as
 * a whole (a pod restarted together, as with `restartPolicy` on the pod).
 */
export interface PodSidecar {
  /** Its app name in the pod (`berth logs --app`): lower-case letters, digits, "-"; not `app`. */
  readonly name: string;
  readonly image: string;
  /** The whole argv; absent → the image's Entrypoint + Cmd. */
  readonly command?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** Volumes of the instance (the DesiredLRP's `volumes`) this app mounts too, as in a Kubernetes pod. */
  readonly mounts?: readonly SidecarMount[];
  /**
   * The system service it is (its path, `/web/log-ship`), set by a system's deploy: what `berth
   * logs SYSTEM/SERVICE` and `berth exec` find it by, as its name is unique only in one pod.
   */
  readonly service?: string;
}

export interface SidecarMount {
  /** The name of one of the DesiredLRP's volumes. */
  readonly volume: string;
  readonly target: string;
  readonly read_only?: boolean;
}

/** The app name of an instance's own (first) app when it has sidecars. */
export const mainAppName = 'app';

export const podSidecarLimits = { maxSidecars: 4 } as const;

/** The runtime's app names (rkt's AC names), lookahead-free for the API fuzzer. */
const sidecarNamePattern = '^[a-z0-9][a-z0-9-]*$';

/** A sidecar's mounts of its instance's volumes, by name. */
export const SidecarMountsSchema = Type.Array(
  Type.Object(
    {
      volume: Type.String({ minLength: 1, maxLength: 64 }),
      target: Type.String({ maxLength: 1024 }),
      read_only: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
  { maxItems: 8 },
);

export const PodSidecarsSchema = Type.Array(
  Type.Object(
    {
      name: Type.String({
        pattern: sidecarNamePattern,
        maxLength: 30,
        description: 'its app name in the pod',
      }),
      image: ImageRef(),
      command: Type.Optional(Argv(undefined, { description: 'The whole argv' })),
      env: Type.Optional(EnvMap()),
      mounts: Type.Optional(SidecarMountsSchema),
      service: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    },
    { additionalProperties: false },
  ),
  { maxItems: podSidecarLimits.maxSidecars },
);

/**
 * Checks the sidecars of a DesiredLRP (in process too), naming the offending field; a mount must
 * name one of the DesiredLRP's `volumes`, at a valid target of its own.
 */
export function validatePodSidecars(
  sidecars: readonly PodSidecar[] | undefined,
  volumes: readonly VolumeMount[] = [],
  field = 'sidecars',
): void {
  if (sidecars === undefined) return;
  const refuse = (at: string, message: string): never => {
    throw new InvalidArgumentError(`Invalid ${at}: ${message}`, { field: at });
  };
  if (!Array.isArray(sidecars)) refuse(field, 'expected a list of sidecars');
  if (sidecars.length > podSidecarLimits.maxSidecars)
    refuse(field, `at most ${podSidecarLimits.maxSidecars} sidecars, got ${sidecars.length}`);
  const names = new Set<string>([mainAppName]);
  sidecars.forEach((s, i) => {
    const at = `${field}[${i}].name`;
    if (typeof s.name !== 'string' || s.name.length > 30 || !new RegExp(sidecarNamePattern).test(s.name))
      refuse(at, `"${String(s.name)}": lower-case letters, digits and "-" (max 30)`);
    if (names.has(s.name))
      refuse(
        at,
        s.name === mainAppName
          ? `"${mainAppName}" is the main app's name`
          : `two sidecars are named "${s.name}"`,
      );
    names.add(s.name);
    if (typeof s.image !== 'string' || s.image === '') refuse(`${field}[${i}].image`, 'an image is required');
    const targets = new Set<string>();
    const mounts: readonly SidecarMount[] = s.mounts ?? [];
    mounts.forEach((m, j) => {
      const mount = `${field}[${i}].mounts[${j}]`;
      if (!volumes.some((v) => v.name === m.volume))
        refuse(
          `${mount}.volume`,
          `"${m.volume}" is not one of the volumes (${volumes.map((v) => v.name).join(', ') || 'none'})`,
        );
      const problem = mountTargetProblem(m.target);
      if (problem !== undefined) refuse(`${mount}.target`, problem);
      const target = plainMountTarget(m.target);
      if (targets.has(target)) refuse(`${mount}.target`, `two mounts at ${target}`);
      targets.add(target);
    });
  });
}
