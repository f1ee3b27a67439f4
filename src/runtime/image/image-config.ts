import { InvalidArgumentError } from '../../core/index.js';
import { isDigest } from './digest.js';
import type { ImageRuntimeConfig } from './image-types.js';

/** What the store keeps of an image config blob (OCI image-spec config.md / docker's v1 image). */
export interface ParsedImageConfig {
  readonly architecture: string;
  readonly os: string;
  readonly diffIds: readonly string[];
  readonly runtime: ImageRuntimeConfig;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringList(value: unknown, field: string, what: string): readonly string[] | null | undefined {
  if (value === undefined || value === null) return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
  throw new InvalidArgumentError(`${what}: config.${field} must be an array of strings`);
}

function optionalString(value: unknown, field: string, what: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  throw new InvalidArgumentError(`${what}: config.${field} must be a string`);
}

/** The `config` section a runtime honours, with its types checked so pods can trust them. */
export function runtimeConfigOf(section: unknown, what: string): ImageRuntimeConfig {
  if (section === undefined || section === null) return {};
  if (!isRecord(section)) throw new InvalidArgumentError(`${what}: "config" must be an object`);
  const out: Record<string, unknown> = {};
  for (const field of ['Entrypoint', 'Cmd', 'Env'] as const) {
    const list = stringList(section[field], field, what);
    if (list !== undefined) out[field] = list;
  }
  for (const field of ['WorkingDir', 'User', 'StopSignal'] as const) {
    const text = optionalString(section[field], field, what);
    if (text !== undefined && text !== '') out[field] = text;
  }
  if (isRecord(section.ExposedPorts)) out.ExposedPorts = section.ExposedPorts;
  if (isRecord(section.Labels)) {
    out.Labels = Object.fromEntries(
      Object.entries(section.Labels).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
  }
  return out as ImageRuntimeConfig;
}

export function parseImageConfig(bytes: Buffer, what: string): ParsedImageConfig {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new InvalidArgumentError(`${what} is not valid JSON: ${err instanceof Error ? err.message : err}`);
  }
  if (!isRecord(json)) throw new InvalidArgumentError(`${what} is not a JSON object`);
  const rootfs = json.rootfs;
  if (!isRecord(rootfs) || rootfs.type !== 'layers' || !Array.isArray(rootfs.diff_ids)) {
    throw new InvalidArgumentError(`${what} has no rootfs of type "layers" with diff_ids`);
  }
  const diffIds = rootfs.diff_ids;
  for (const id of diffIds) {
    if (typeof id !== 'string' || !isDigest(id)) {
      throw new InvalidArgumentError(`${what} lists the diff_id ${JSON.stringify(id)}, not a sha256 digest`);
    }
  }
  return {
    architecture: typeof json.architecture === 'string' ? json.architecture : '',
    os: typeof json.os === 'string' ? json.os : '',
    diffIds: diffIds as string[],
    runtime: runtimeConfigOf(json.config, what),
  };
}
