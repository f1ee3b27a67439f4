import { InvalidArgumentError } from '../core/index.js';
import { isImageName, normalizeImageName } from '../runtime/image/index.js';

/**
 * An image reference as `berth image pull`, cells and `berth run` read it, docker's way: when the
 * first path component looks like a host (has a `.` or a `:port`, or is `localhost`) the image
 * lives on THAT registry; otherwise on the berth server (`--server`), as before this existed.
 */
export interface RemoteReference {
  /** `host[:port]` of another registry, or undefined for the berth server's own registry. */
  readonly registry: string | undefined;
  /** The repository on that registry, e.g. `library/busybox`. */
  readonly repository: string;
  /** What to ask the registry for: the digest when one was given, else the tag. */
  readonly reference: string;
  readonly digest: string | undefined;
  /** The store's `name:tag` for the pulled image; undefined for a digest-only reference. */
  readonly localName: string | undefined;
}

/** `sha256:` (64 hex) and `sha512:` (128 hex): the algorithms of the OCI image spec. */
const digestPattern = /^(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$/;

export function isRegistryHost(component: string): boolean {
  return component === 'localhost' || component.includes('.') || component.includes(':');
}

/** Docker Hub's names: `docker.io/busybox` is `library/busybox` on registry-1.docker.io. */
const dockerHubAliases: ReadonlySet<string> = new Set([
  'docker.io',
  'index.docker.io',
  'registry-1.docker.io',
]);

/**
 * Parses `[HOST[:PORT]/]REPO[:TAG][@DIGEST]`. A digest wins over a tag for what is fetched (as
 * in docker); the tag then still names the image in the store.
 */
export function parseRemoteReference(text: string): RemoteReference {
  const at = text.indexOf('@');
  const digest = at === -1 ? undefined : text.slice(at + 1);
  const named = at === -1 ? text : text.slice(0, at);
  if (digest !== undefined && !digestPattern.test(digest)) {
    throw new InvalidArgumentError(
      `Invalid image reference "${text}": the digest must be sha256:<64 hex> or sha512:<128 hex>`,
      { image: text },
    );
  }
  if (!isImageName(named)) normalizeImageName(named); // throws, naming what is expected
  const slash = named.indexOf('/');
  const first = slash === -1 ? '' : named.slice(0, slash);
  const hasTag = named.lastIndexOf(':') > named.lastIndexOf('/');
  const full = normalizeImageName(named);
  const colon = full.lastIndexOf(':');
  const tag = full.slice(colon + 1);
  let registry: string | undefined;
  let repository = full.slice(0, colon);
  if (first !== '' && isRegistryHost(first)) {
    registry = first;
    repository = repository.slice(first.length + 1);
    if (dockerHubAliases.has(registry)) {
      registry = 'registry-1.docker.io';
      if (!repository.includes('/')) repository = `library/${repository}`;
    }
  }
  return {
    registry,
    repository,
    reference: digest ?? tag,
    digest,
    localName: digest !== undefined && !hasTag ? undefined : full,
  };
}

/**
 * The base URL of a registry host: http for loopback hosts and the registries the user called
 * insecure (podman's registries.conf `insecure = true`, berth's `--insecure` and
 * $BERTH_INSECURE_REGISTRIES), https for every other.
 */
export function registryBaseUrl(host: string, insecure: readonly string[] = []): string {
  const hostname = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  const loopback = hostname === 'localhost' || hostname === '::1' || /^127\./.test(hostname);
  return `${loopback || insecure.includes(host) || insecure.includes(hostname) ? 'http' : 'https'}://${host}`;
}

/** The insecure registries of the environment: $BERTH_INSECURE_REGISTRIES, comma-separated. */
export function insecureRegistriesFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.BERTH_INSECURE_REGISTRIES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}
