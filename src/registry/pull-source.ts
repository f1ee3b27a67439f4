import { RegistryClient } from './registry-client.js';
import { findCredentials } from './registry-credentials.js';
import {
  insecureRegistriesFromEnv,
  parseRemoteReference,
  type RemoteReference,
  registryBaseUrl,
} from './remote-reference.js';

/** Where images without a registry host come from, and how to reach the others. */
export interface PullSourceOptions {
  /** The berth server whose registry serves names without a host (`busybox:1.36`). */
  readonly serverUrl: string;
  /** Its API token: sent to the berth server only, never to another registry. */
  readonly token?: string;
  /** `USER:PASS` for other registries (`--creds`); else the auth files podman and skopeo write. */
  readonly creds?: string;
  /** One auth file instead of the usual ones (`--authfile`). */
  readonly authFile?: string;
  /** Registries reached over plain http (`--insecure`, $BERTH_INSECURE_REGISTRIES). */
  readonly insecure?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
}

export interface PullSource {
  readonly client: RegistryClient;
  readonly reference: RemoteReference;
  /** The registry's base URL, for messages. */
  readonly url: string;
}

/**
 * The registry and client for an image reference: the berth server (with its token) for a name
 * without a host, or the host it names, over https unless loopback or insecure, with the user's
 * credentials for that host. A client per repository is reused through `clients`, so a token
 * won once serves the next pulls.
 */
export function pullSource(
  ref: string,
  options: PullSourceOptions,
  clients: Map<string, RegistryClient> = new Map(),
): PullSource {
  const reference = parseRemoteReference(ref);
  const server = new URL(options.serverUrl);
  const own = reference.registry === undefined || reference.registry === server.host;
  const url = own
    ? options.serverUrl.replace(/\/+$/, '')
    : registryBaseUrl(reference.registry ?? '', [
        ...(options.insecure ?? []),
        ...insecureRegistriesFromEnv(options.env),
      ]);
  // Credentials may differ per repository (auth.json's most specific key), tokens are per scope.
  const key = `${url}/${reference.repository}`;
  let client = clients.get(key);
  if (client === undefined) {
    const credentials = own
      ? undefined
      : findCredentials(reference.registry ?? '', reference.repository, {
          ...(options.creds !== undefined ? { creds: options.creds } : {}),
          ...(options.authFile !== undefined ? { authFile: options.authFile } : {}),
          ...(options.env !== undefined ? { env: options.env } : {}),
        });
    client = new RegistryClient({
      serverUrl: url,
      ...(own && options.token !== undefined ? { token: options.token } : {}),
      ...(credentials !== undefined ? { credentials } : {}),
    });
    clients.set(key, client);
  }
  return { client, reference, url };
}
