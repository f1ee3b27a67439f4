import { InvalidArgumentError } from './berth-error.js';

/** What a list route returns when the caller names no `limit`. */
export const defaultPageSize = 100;
/** The largest page a caller may ask for: bigger lists are walked with `cursor`. */
export const maxPageSize = 1000;

/**
 * The page size of a list route's `limit` query parameter (a string of digits, as the route's
 * schema admits): absent → the default; 0, past the maximum or not a number → a 400 naming `limit`.
 */
export function parsePageLimit(raw: string | undefined): number {
  if (raw === undefined) return defaultPageSize;
  const limit = /^[0-9]{1,7}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(limit >= 1 && limit <= maxPageSize)) {
    throw new InvalidArgumentError(`Invalid limit "${raw}": expected an integer from 1 to ${maxPageSize}`, {
      field: 'limit',
      maximum: maxPageSize,
    });
  }
  return limit;
}

/**
 * A cursor is the key of the last record of the previous page, opaque to callers (base64url of its
 * JSON), so a page starts strictly after it: records inserted or removed meanwhile never make a
 * walk repeat or skip one that was there all along.
 */
export function encodeCursor(key: unknown): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** Decodes `cursor`; one this API did not hand out (or for another list) is a 400 naming `cursor`. */
export function decodeCursor<K>(
  raw: string | undefined,
  isKey: (value: unknown) => value is K,
): K | undefined {
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = /^[A-Za-z0-9_-]{1,4096}$/.test(raw)
      ? JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'))
      : undefined;
  } catch {
    value = undefined;
  }
  if (!isKey(value)) {
    throw new InvalidArgumentError(
      `Invalid cursor "${raw.slice(0, 64)}": expected the next_cursor of a previous page`,
      {
        field: 'cursor',
      },
    );
  }
  return value;
}

/**
 * A string key as a cursor may carry: no NUL (PostgreSQL cannot compare one: a 500, not a 400)
 * and no longer than any key this API stores.
 */
export function isString(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 4096 && !value.includes('\u0000');
}

/**
 * One page of `rows`, which holds up to `limit + 1` records in key order (the extra one only says
 * that there is more): `{ [name]: records, next_cursor? }`, the container list's shape.
 */
export function toPage<T, N extends string>(
  name: N,
  rows: readonly T[],
  limit: number,
  keyOf: (record: T) => unknown,
): { [P in N]: T[] } & { next_cursor?: string } {
  const page = rows.slice(0, limit);
  const more = rows.length > limit && page.length > 0;
  return {
    [name]: page,
    ...(more ? { next_cursor: encodeCursor(keyOf(page.at(-1)!)) } : {}),
  } as { [P in N]: T[] } & { next_cursor?: string };
}

/**
 * A page of a list that is small by nature (cells, domains, leases, tokens) and read whole from the
 * store: the same `limit` + `cursor` contract as the keyset-paged lists, cut here in key order.
 */
export function pageOfWhole<T, N extends string>(
  name: N,
  all: readonly T[],
  query: { readonly limit?: string; readonly cursor?: string },
  keyOf: (record: T) => string,
): { [P in N]: T[] } & { next_cursor?: string } {
  const limit = parsePageLimit(query.limit);
  const after = decodeCursor(query.cursor, isString);
  const sorted = [...all].sort((a, b) => compareKeys(keyOf(a), keyOf(b)));
  const rest = after === undefined ? sorted : sorted.filter((r) => compareKeys(keyOf(r), after) > 0);
  return toPage(name, rest.slice(0, limit + 1), limit, keyOf);
}

function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
