import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { InvalidArgumentError } from './berth-error.js';

/**
 * Where the server may POST on a user's behalf (task completion callbacks, webhooks). A URL a user
 * names is fetched from the server's own network position, so without a rule anyone who may create
 * a task could make the server call its own loopback services, a cell's rep API or a cloud's
 * metadata service (169.254.169.254): server-side request forgery. Loopback, link-local and
 * unspecified addresses are refused unless the operator allows them
 * (`berth server --allow-private-callbacks`, e.g. for a consumer on the same machine).
 */
export interface CallbackTargetPolicy {
  readonly allowPrivate: boolean;
}

/** Why `address` (an IP literal) is not a callback target, or undefined when it may be one. */
export function privateAddressKind(address: string): string | undefined {
  const ip = address.replace(/^\[|\]$/g, '').toLowerCase();
  const version = isIP(ip);
  if (version === 4) return ipv4Kind(ip);
  if (version !== 6) return undefined;
  // ::ffff:a.b.c.d and ::ffff:XXXX:XXXX carry an IPv4 address: judge that one.
  const mapped = /^::ffff:(?:0+:)?(\d+\.\d+\.\d+\.\d+)$/.exec(ip)?.[1] ?? mappedHexIpv4(ip);
  if (mapped) return ipv4Kind(mapped);
  const groups = expandIpv6(ip);
  if (groups.every((g) => g === 0)) return 'unspecified';
  if (groups.slice(0, 7).every((g) => g === 0) && groups[7] === 1) return 'loopback';
  if (((groups[0] ?? 0) & 0xffc0) === 0xfe80) return 'link-local';
  return undefined;
}

function ipv4Kind(ip: string): string | undefined {
  const [a, b] = ip.split('.').map(Number) as [number, number];
  if (a === 127) return 'loopback';
  if (a === 169 && b === 254) return 'link-local';
  if (a === 0) return 'unspecified';
  return undefined;
}

function mappedHexIpv4(ip: string): string | undefined {
  const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(ip);
  if (!m) return undefined;
  const hi = Number.parseInt(m[1]!, 16);
  const lo = Number.parseInt(m[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

function expandIpv6(ip: string): number[] {
  const [head = '', tail] = ip.split('::');
  const parse = (part: string) => (part ? part.split(':').map((g) => Number.parseInt(g, 16)) : []);
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...new Array(Math.max(0, 8 - left.length - right.length)).fill(0), ...right];
}

function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * Checks a callback URL when it is given (creating a task or a subscription): an http(s) URL whose
 * host is not a loopback, link-local or unspecified address nor `localhost`. A bad one is a 400
 * naming `field`. Hostnames are resolved only at delivery (`refusedCallbackTarget`): what a name
 * resolves to may change, and creation must not wait on DNS.
 */
export function checkCallbackUrl(raw: string, field: string, policy: CallbackTargetPolicy): void {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidArgumentError(`Invalid ${field} "${raw}": expected an http(s) URL`, { field });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidArgumentError(`Invalid ${field} "${raw}": expected an http(s) URL`, { field });
  }
  if (policy.allowPrivate) return;
  const kind = isLocalhostName(url.hostname) ? 'loopback' : privateAddressKind(url.hostname);
  if (kind) {
    throw new InvalidArgumentError(
      `Invalid ${field} "${raw}": ${url.hostname} is a ${kind} address, which the server does not call back (an operator allows it with berth server --allow-private-callbacks)`,
      { field, address_kind: kind },
    );
  }
}

/**
 * At delivery, after DNS: why the server refuses to POST to `url` (its host is or resolves to a
 * loopback, link-local or unspecified address), or undefined when it may. A name that does not
 * resolve is left to the request itself to fail (and be retried).
 */
export async function refusedCallbackTarget(
  url: string,
  policy: CallbackTargetPolicy,
  resolve: (hostname: string) => Promise<readonly string[]> = resolveAll,
): Promise<string | undefined> {
  if (policy.allowPrivate) return undefined;
  let hostname: string;
  try {
    hostname = new URL(url).hostname;
  } catch {
    return undefined;
  }
  const refuse = (address: string, kind: string) =>
    `refused: ${hostname}${address === hostname ? '' : ` resolves to ${address}`}, a ${kind} address (berth server --allow-private-callbacks allows it)`;
  if (isLocalhostName(hostname)) return refuse(hostname, 'loopback');
  const literal = hostname.replace(/^\[|\]$/g, '');
  if (isIP(literal)) {
    const kind = privateAddressKind(literal);
    return kind ? refuse(hostname, kind) : undefined;
  }
  let addresses: readonly string[];
  try {
    addresses = await resolve(hostname);
  } catch {
    return undefined;
  }
  for (const address of addresses) {
    const kind = privateAddressKind(address);
    if (kind) return refuse(address, kind);
  }
  return undefined;
}

async function resolveAll(hostname: string): Promise<string[]> {
  return (await lookup(hostname, { all: true })).map((a) => a.address);
}
