import { InvalidArgumentError } from '../core/index.js';
import { indexTypes, manifestTypes } from '../runtime/image/index.js';

/** An OCI platform: `linux/arm64/v8` is os linux, architecture arm64, variant v8. */
export interface Platform {
  readonly os: string;
  readonly architecture: string;
  readonly variant?: string;
}

export interface Descriptor {
  readonly digest: string;
  readonly size: number;
  readonly mediaType?: string;
  readonly platform?: { readonly os?: string; readonly architecture?: string; readonly variant?: string };
}

/** Go's GOARCH names, which OCI platforms use, for node's process.arch. */
export function hostArchitecture(): string {
  const map: Readonly<Record<string, string>> = { x64: 'amd64', ia32: '386', ppc64: 'ppc64le' };
  return map[process.arch] ?? process.arch;
}

/** The platform of this host: what a cell runs, and what a pull picks unless told otherwise. */
export function hostPlatform(): Platform {
  const architecture = hostArchitecture();
  // 32-bit arm images come per variant (v6, v7); node knows which one it was built for.
  const armVersion = (process.config.variables as { arm_version?: string }).arm_version;
  return architecture === 'arm' && armVersion
    ? { os: 'linux', architecture, variant: `v${armVersion}` }
    : {
        os: 'linux',
        architecture,
      };
}

/** `os/arch[/variant]` of `--platform`, as podman and docker take it. */
export function parsePlatform(text: string): Platform {
  const parts = text.split('/');
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => !/^[a-z0-9_.-]+$/.test(p))) {
    throw new InvalidArgumentError(
      `Invalid --platform "${text}": expected OS/ARCH[/VARIANT] such as linux/arm64`,
      {
        flag: 'platform',
      },
    );
  }
  const [os = '', architecture = '', variant] = parts;
  return variant === undefined ? { os, architecture } : { os, architecture, variant };
}

export function formatPlatform(p: Platform): string {
  return `${p.os}/${p.architecture}${p.variant ? `/${p.variant}` : ''}`;
}

/** arm64's only variant is v8: an index may name it or not, as containerd's matcher treats it. */
function variantMatches(
  offered: string | undefined,
  wanted: string | undefined,
  architecture: string,
): boolean {
  if (wanted === undefined) return true;
  const normalize = (v: string | undefined) => (architecture === 'arm64' && v === undefined ? 'v8' : v);
  return normalize(offered) === normalize(wanted);
}

function manifestsOf(index: Record<string, unknown>): Descriptor[] {
  return (Array.isArray(index.manifests) ? index.manifests : []) as Descriptor[];
}

/**
 * The entry of an image index (manifest list) for `wanted` (the host's platform by default): a
 * single-platform manifest or a nested index. Never another platform's image: undefined when the
 * index has none.
 */
export function platformDescriptor(
  index: Record<string, unknown>,
  wanted: Platform = hostPlatform(),
): Descriptor | undefined {
  return manifestsOf(index).find(
    (m) =>
      m.platform?.os === wanted.os &&
      m.platform.architecture === wanted.architecture &&
      variantMatches(m.platform.variant, wanted.variant, wanted.architecture) &&
      (m.mediaType === undefined || manifestTypes.has(m.mediaType) || indexTypes.has(m.mediaType)),
  );
}

/** What an index offers, for messages: `linux/arm64, linux/s390x`. */
export function indexPlatforms(index: Record<string, unknown>): string {
  return (
    manifestsOf(index)
      .map((m) =>
        m.platform === undefined
          ? `${m.mediaType ?? 'untyped'} without a platform`
          : formatPlatform({
              os: m.platform.os ?? '?',
              architecture: m.platform.architecture ?? '?',
              ...(m.platform.variant ? { variant: m.platform.variant } : {}),
            }),
      )
      .join(', ') || 'none'
  );
}
