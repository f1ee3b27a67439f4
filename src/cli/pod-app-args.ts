/**
 * The apps and volumes of `berth run|prepare IMAGE [-- ARGS] [--- [FLAGS] IMAGE [-- ARGS]]…`:
 * rkt's `---` starts another app of the pod, whose own flags (`--app-name`, `-e`, `--user`,
 * `--workdir`, `--entrypoint`, `--mount`, `-v`) apply to the image they precede.
 */
import { parseArgs } from 'node:util';
import { InvalidArgumentError } from '../core/index.js';
import {
  type MountSpec,
  type PrepareOptions,
  parseMountFlag,
  parseShortVolume,
  parseVolumeFlag,
  type SideAppOptions,
  type VolumeSpec,
} from '../runtime/pod-runtime.js';
import { appFlags, appSeparator } from './pod-app-flags.js';

interface AppFlagValues {
  readonly 'app-name'?: string;
  readonly entrypoint?: string;
  readonly env?: readonly string[];
  readonly workdir?: string;
  readonly user?: string;
  readonly mount?: readonly string[];
  readonly volume?: readonly string[];
}

/** `-v` holds both spellings: a colon before any comma is the short form. */
function isShortVolume(text: string): boolean {
  const colon = text.indexOf(':');
  const comma = text.indexOf(',');
  return colon > 0 && (comma === -1 || colon < comma);
}

/** An app's overrides from its flags, and the pod volumes its `-v`/`--volume` flags add. */
export function appFromFlags(
  values: AppFlagValues,
  volumes: VolumeSpec[],
): { overrides: Omit<SideAppOptions, 'image' | 'args'>; mounts: MountSpec[] } {
  const mounts = (values.mount ?? []).map(parseMountFlag);
  for (const text of values.volume ?? []) {
    if (!isShortVolume(text)) {
      volumes.push(parseVolumeFlag(text));
      continue;
    }
    const { volume, mount } = parseShortVolume(text, volumes.length);
    // One berth volume mounted by several apps is one volume of the pod.
    if (!(volume.kind === 'named' && volumes.some((v) => v.kind === 'named' && v.name === volume.name)))
      volumes.push(volume);
    mounts.push(mount);
  }
  const overrides: { -readonly [K in keyof SideAppOptions]?: SideAppOptions[K] } = {};
  if (values['app-name'] !== undefined) overrides.name = values['app-name'];
  if (values.entrypoint !== undefined) overrides.entrypoint = values.entrypoint;
  if (values.env !== undefined) overrides.env = values.env;
  if (values.workdir !== undefined) overrides.workdir = values.workdir;
  if (values.user !== undefined) overrides.user = values.user;
  return { overrides, mounts };
}

/** Splits `rest` at each `---`: the first app's ARGS, then each other app's words. */
export function splitApps(rest: readonly string[]): { args: string[]; others: string[][] } {
  const groups: string[][] = [[]];
  for (const word of rest) {
    if (word === appSeparator) groups.push([]);
    else groups[groups.length - 1]?.push(word);
  }
  const [args = [], ...others] = groups;
  return { args, others };
}

/** One app after `---`: `[FLAGS] IMAGE [-- ARGS]`. */
export function parseSideApp(words: readonly string[], volumes: VolumeSpec[]): SideAppOptions {
  const dashDash = words.indexOf('--');
  const own = dashDash === -1 ? [...words] : words.slice(0, dashDash);
  const args = dashDash === -1 ? [] : words.slice(dashDash + 1);
  const options: NonNullable<Parameters<typeof parseArgs>[0]>['options'] = {};
  for (const [name, flag] of Object.entries(appFlags))
    options[name] = {
      type: flag.type,
      ...(flag.short !== undefined ? { short: flag.short } : {}),
      ...(flag.multiple ? { multiple: true } : {}),
    };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: own, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new InvalidArgumentError(
      `After "${appSeparator}": ${err instanceof Error ? err.message.replace(/\. To specify.*$/s, '') : String(err)}`,
    );
  }
  if (parsed.positionals.length !== 1)
    throw new InvalidArgumentError(
      `After "${appSeparator}": expected [FLAGS] IMAGE [-- ARGS], got ${parsed.positionals.length === 0 ? 'no image' : parsed.positionals.map((p) => `"${p}"`).join(' ')}`,
    );
  const { overrides, mounts } = appFromFlags(parsed.values as AppFlagValues, volumes);
  return {
    ...overrides,
    image: parsed.positionals[0] as string,
    ...(args.length > 0 ? { args } : {}),
    ...(mounts.length > 0 ? { mounts } : {}),
  };
}

/** The pod's apps after the first, its volumes, and the first app's mounts and name. */
export function podAppsOptions(
  values: AppFlagValues,
  rest: readonly string[],
): Pick<PrepareOptions, 'args' | 'appName' | 'mounts' | 'sideApps' | 'volumes'> {
  const volumes: VolumeSpec[] = [];
  const { args, others } = splitApps(rest);
  // The first app's env, user, workdir and entrypoint are the pod flags' (pod-commands.ts).
  const { env: _env, entrypoint: _entrypoint, workdir: _workdir, user: _user, ...firstOnly } = values;
  const first = appFromFlags(firstOnly, volumes);
  const sideApps = others.map((words) => parseSideApp(words, volumes));
  return {
    args,
    ...(first.overrides.name !== undefined ? { appName: first.overrides.name } : {}),
    ...(first.mounts.length > 0 ? { mounts: first.mounts } : {}),
    ...(sideApps.length > 0 ? { sideApps } : {}),
    ...(volumes.length > 0 ? { volumes } : {}),
  };
}
