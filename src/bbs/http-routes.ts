import { InvalidArgumentError } from '../core/index.js';

/**
 * The HTTP routes of an LRP (issue 22): a hostname (optionally `*.` + a domain, and a path
 * prefix) sent to one of the LRP's container ports. Stored the way Diego keeps routes, as the
 * value of one key of the opaque routes map (`{ "http": [...] }`), so other keys stay free for
 * other route kinds and LRPs stored before routes meant anything stay readable.
 */
export interface HttpRoute {
  readonly hostname: string;
  readonly port: number;
  /** A path prefix ("/api"); absent: every path. */
  readonly path?: string;
}

/** The key of the routes map the router reads. */
export const httpRoutesKey = 'http';

/** What a caller may give as `routes`: the map as stored, or the plain array of HTTP routes. */
export type RoutesInput = Readonly<Record<string, unknown>> | readonly HttpRoute[];

/** The stored map of what was given: an array becomes `{ http: [...] }`. */
export function normalizeRoutes(input: RoutesInput): Readonly<Record<string, unknown>> {
  return Array.isArray(input) ? { [httpRoutesKey]: input } : (input as Readonly<Record<string, unknown>>);
}

// One DNS label: letters, digits and inner hyphens, at most 63 characters.
const label = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const dnsName = new RegExp(`^(?:\\*\\.)?(?:${label}\\.)*${label}$`);

/** A hostname a route may name: a DNS name of at most 253 characters, optionally `*.` + a name. */
export function isRouteHostname(hostname: string): boolean {
  return hostname.length <= 253 && dnsName.test(hostname);
}

/**
 * Checks the `http` routes of a routes map: each entry names a DNS hostname, a container port the
 * LRP exposes (`ports`) and, if any, a path starting with "/". The error names the entry's field
 * (`routes.http[1].hostname`). Other keys are opaque, as in Diego.
 */
export function validateHttpRoutes(
  routes: Readonly<Record<string, unknown>>,
  ports: readonly number[],
): void {
  const given = routes[httpRoutesKey];
  if (given === undefined) return;
  const at = `routes.${httpRoutesKey}`;
  if (!Array.isArray(given)) throw invalid(at, 'must be an array of {hostname, port, path?}');
  given.forEach((entry: unknown, i) => {
    const field = `${at}[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
      throw invalid(field, 'must be an object {hostname, port, path?}');
    const route = entry as Record<string, unknown>;
    const extra = Object.keys(route).filter((k) => k !== 'hostname' && k !== 'port' && k !== 'path');
    if (extra.length > 0)
      throw invalid(`${field}.${extra[0]}`, 'is not a route field (hostname, port, path)');
    const { hostname, port, path } = route;
    if (typeof hostname !== 'string' || !isRouteHostname(hostname))
      throw invalid(
        `${field}.hostname`,
        `must be a lower-case DNS name (labels of a-z, 0-9 and inner "-", optionally "*." first), got ${JSON.stringify(hostname)}`,
      );
    if (typeof port !== 'number' || !Number.isInteger(port))
      throw invalid(`${field}.port`, `must be an integer container port, got ${JSON.stringify(port)}`);
    if (!ports.includes(port))
      throw invalid(
        `${field}.port`,
        `${port} is not a port the LRP exposes (ports: ${ports.length > 0 ? ports.join(', ') : 'none'})`,
      );
    if (path !== undefined && (typeof path !== 'string' || !/^\/[\x21-\x7e]{0,1023}$/.test(path)))
      throw invalid(`${field}.path`, `must start with "/" and hold no spaces, got ${JSON.stringify(path)}`);
  });
}

/**
 * The well-formed HTTP routes of a stored routes map, for readers (the router): an entry that is
 * not one (an LRP stored before routes were checked) is skipped rather than refused.
 */
export function httpRoutesOf(routes: Readonly<Record<string, unknown>> | undefined): HttpRoute[] {
  const given = routes?.[httpRoutesKey];
  if (!Array.isArray(given)) return [];
  const out: HttpRoute[] = [];
  for (const entry of given as unknown[]) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { hostname, port, path } = entry as Record<string, unknown>;
    if (typeof hostname !== 'string' || !isRouteHostname(hostname) || typeof port !== 'number') continue;
    out.push({ hostname, port, ...(typeof path === 'string' && path !== '/' ? { path } : {}) });
  }
  return out;
}

function invalid(field: string, message: string): InvalidArgumentError {
  return new InvalidArgumentError(`${field} ${message}`, { field });
}
