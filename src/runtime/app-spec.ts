import { InvalidArgumentError } from '../core/index.js';
import type { ImageRuntimeConfig } from './image/image-types.js';

/** What a user may override on top of the image config (`berth run` flags, LRP/task fields). */
export interface AppOverrides {
  /** ARGS after `--`: replace the image's Cmd. */
  readonly args?: readonly string[];
  /** The whole argv (Diego's run action / task `command`): replaces Entrypoint and Cmd. */
  readonly command?: readonly string[];
  /** `--entrypoint`: a plain string or a JSON array; "" clears the image's Entrypoint. */
  readonly entrypoint?: string;
  readonly env?: readonly string[];
  readonly workdir?: string;
  readonly user?: string;
}

/** podman's (and docker's) default PATH when the image sets none. */
export const defaultPath = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

function parseEntrypoint(text: string): string[] {
  if (text.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new InvalidArgumentError(`--entrypoint "${text}" looks like JSON but does not parse`, {
        flag: 'entrypoint',
      });
    }
    if (!Array.isArray(parsed) || !parsed.every((s): s is string => typeof s === 'string')) {
      throw new InvalidArgumentError(`--entrypoint "${text}" must be a JSON array of strings`, {
        flag: 'entrypoint',
      });
    }
    return parsed;
  }
  return text === '' ? [] : [text];
}

/**
 * The argv the container runs, as podman computes it: Entrypoint + Cmd, where ARGS replace Cmd,
 * and `--entrypoint` replaces Entrypoint and also drops the image's Cmd (a Cmd written for the
 * old entrypoint is meaningless for the new one). A `command` replaces both.
 */
export function resolveArgs(config: ImageRuntimeConfig, overrides: AppOverrides): string[] {
  if (overrides.command !== undefined && overrides.command.length > 0) return [...overrides.command];
  const entrypoint =
    overrides.entrypoint !== undefined
      ? parseEntrypoint(overrides.entrypoint)
      : [...(config.Entrypoint ?? [])];
  const cmd =
    overrides.args !== undefined && overrides.args.length > 0
      ? [...overrides.args]
      : overrides.entrypoint !== undefined
        ? []
        : [...(config.Cmd ?? [])];
  const argv = [...entrypoint, ...cmd];
  if (argv.length === 0) {
    throw new InvalidArgumentError(
      'No command to run: the image sets no Entrypoint or Cmd; give one after "--" or with --entrypoint',
    );
  }
  return argv;
}

function envKey(entry: string): string {
  const eq = entry.indexOf('=');
  return eq === -1 ? entry : entry.slice(0, eq);
}

/**
 * The environment, merged as podman does: the default PATH (replaced by the image's), the image's
 * Env, then HOSTNAME and HOME unless already set, then the user's `--env` (last wins). `--env KEY`
 * without "=" copies KEY from berth's own environment, or is dropped when unset there.
 */
export function resolveEnv(
  config: ImageRuntimeConfig,
  overrides: AppOverrides,
  extras: { readonly hostname: string; readonly home: string },
  hostEnv: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  const merged = new Map<string, string>();
  const put = (entry: string) => merged.set(envKey(entry), entry);
  put(defaultPath);
  put('container=berth');
  for (const entry of config.Env ?? []) put(entry);
  if (!merged.has('HOSTNAME')) put(`HOSTNAME=${extras.hostname}`);
  if (!merged.has('HOME')) put(`HOME=${extras.home}`);
  for (const entry of overrides.env ?? []) {
    if (entry.startsWith('=') || entry === '') {
      throw new InvalidArgumentError(`--env "${entry}" has no variable name`, { flag: 'env' });
    }
    if (entry.includes('=')) put(entry);
    else if (hostEnv[entry] !== undefined) put(`${entry}=${hostEnv[entry]}`);
  }
  return [...merged.values()];
}

export function resolveWorkdir(config: ImageRuntimeConfig, overrides: AppOverrides): string {
  const dir = overrides.workdir ?? (config.WorkingDir || '/');
  if (!dir.startsWith('/')) {
    throw new InvalidArgumentError(`--workdir "${dir}" must be an absolute path`, { flag: 'workdir' });
  }
  return dir;
}
