import { HttpJsonClient, type HttpOperation, type OperationArgs, type QueryArgs } from '../core/index.js';
import type { CommandContext } from './command.js';
import { resolveServerTarget } from './server-target.js';

/** What "Cannot reach the berth server" adds, so the user knows how to point at another one. */
export const unreachableHint = '(is "berth server" running? --server URL[,URL…] or $BERTH_SERVER)';

/**
 * The CLI's client of the server's public API: the one HttpJsonClient, at the server and with the
 * token of the one rule (server-target.ts). Commands call the route tables' operations
 * (`client.call(bbsPublicOperations.getTask, { params })`), never a path string.
 */
export function serverClient(ctx: Pick<CommandContext, 'values'>): HttpJsonClient {
  const target = resolveServerTarget(ctx.values);
  return new HttpJsonClient(target.urls, { token: target.token, unreachableHint });
}

/**
 * Every record of a paged list route (`{ [key]: [...], next_cursor? }`, docs/bbs.md), walking
 * its pages at the largest size: the CLI's lists show the whole set, as users expect.
 */
export async function listAll<
  Key extends string,
  T,
  Q extends { readonly limit?: number | string; readonly cursor?: string },
>(
  client: HttpJsonClient,
  op: HttpOperation<
    undefined,
    Q,
    undefined,
    { readonly [k in Key]: T[] } & { readonly next_cursor?: string }
  >,
  key: Key,
  query?: QueryArgs<Q>,
  pageSize = 1000,
): Promise<T[]> {
  const records: T[] = [];
  let cursor: string | undefined;
  do {
    const args = { query: { ...query, limit: pageSize, ...(cursor !== undefined ? { cursor } : {}) } };
    const page = await client.call(op, args as OperationArgs<typeof op>);
    records.push(...(page[key] ?? []));
    cursor = page.next_cursor;
  } while (cursor !== undefined);
  return records;
}
