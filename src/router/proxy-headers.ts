import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

// Hop-by-hop headers (RFC 9110 7.6.1) are the client's connection's, never forwarded.
const hopByHop = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
/**
 * The end-to-end headers of `raw` (a message's rawHeaders: name, value, name, value, …) as the
 * same flat list, which node's http writes as it is: no headers object is built or validated per
 * request (the proxy's largest per-request cost besides the socket writes, docs/routing.md).
 * `forwarded` (a request's headers) collects the X-Forwarded-* and X-Request-Id values instead of
 * passing them on, and drops `Expect`: node's server already answered the client's 100-continue, so
 * the body follows without asking the instance (and undici refuses the header).
 */
export function endToEndRaw(raw: readonly string[], forwarded?: Map<string, string>): string[] {
  const out: string[] = [];
  let named: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 10 && name.toLowerCase() === 'connection')
      named = (raw[i + 1] as string).split(',').map((h) => h.trim().toLowerCase());
  }
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    const lower = name.toLowerCase();
    if (hopByHop.has(lower) || named?.includes(lower)) continue;
    if (forwarded && lower === 'expect') continue;
    if (forwarded && forwardedNames.has(lower)) {
      // A repeated X-Forwarded-For is one list (RFC 7239's predecessor); the others: the first.
      const prior = forwarded.get(lower);
      if (prior === undefined) forwarded.set(lower, value);
      else if (lower === 'x-forwarded-for') forwarded.set(lower, `${prior}, ${value}`);
      continue;
    }
    out.push(name, value);
  }
  return out;
}

/**
 * An instance's answer headers as undici hands them over (raw name and value buffers) in the flat
 * string list node's `writeHead` writes as it is, hop-by-hop ones left out.
 */
export function responseHeaders(raw: readonly Buffer[]): string[] {
  const text: string[] = new Array(raw.length);
  for (let i = 0; i < raw.length; i++) text[i] = (raw[i] as Buffer).toString('latin1');
  return endToEndRaw(text);
}

/**
 * The Host header and whether a body follows, read from the raw headers: `req.headers` is built
 * on first use, and the proxy never needs it.
 */
export function requestFacts(raw: readonly string[]): { host: string | undefined; hasBody: boolean } {
  let host: string | undefined;
  let hasBody = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && host === undefined && name.toLowerCase() === 'host') host = raw[i + 1];
    else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') hasBody = true;
    else if (name.length === 14 && name.toLowerCase() === 'content-length' && Number(raw[i + 1]) > 0)
      hasBody = true;
  }
  return { host, hasBody };
}

const forwardedNames = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-request-id']);

/** The request's end-to-end headers with X-Forwarded-For/Proto/Host and X-Request-Id added. */
export function forwardedHeaders(req: IncomingMessage, host: string | undefined): string[] {
  const seen = new Map<string, string>();
  const out = endToEndRaw(req.rawHeaders, seen);
  const client = req.socket.remoteAddress ?? '';
  const prior = seen.get('x-forwarded-for');
  out.push(
    'x-forwarded-for',
    prior ? `${prior}, ${client}` : client,
    'x-forwarded-proto',
    seen.get('x-forwarded-proto') ?? 'http',
    'x-forwarded-host',
    seen.get('x-forwarded-host') ?? host ?? '',
    'x-request-id',
    seen.get('x-request-id') ?? randomUUID(),
  );
  return out;
}

/** The Host header's name: lower case, without its port. */
export function hostOf(header: string | undefined): string {
  if (!header) return '';
  const host = header.startsWith('[') ? header.slice(0, header.indexOf(']') + 1) : header.split(':')[0];
  return (host ?? '').toLowerCase().replace(/\.$/, '');
}

export function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
