import { Type } from '@sinclair/typebox';
import { Argv, EnvMap, ImageRef, InvalidArgumentError } from '../core/index.js';

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
}

/** The app name of an instance's own (first) app when it has sidecars. */
export const mainAppName = 'app';

export const podSidecarLimits = { maxSidecars: 4 } as const;

/** The runtime's app names (rkt's AC names), lookahead-free for the API fuzzer. */
const sidecarNamePattern = '^[a-z0-9][a-z0-9-]*$';

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
    },
    { additionalProperties: false },
  ),
  { maxItems: podSidecarLimits.maxSidecars },
);

/** Checks the sidecars of a DesiredLRP (in process too), naming the offending field. */
export function validatePodSidecars(sidecars: readonly PodSidecar[] | undefined, field = 'sidecars'): void {
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
  });
}
