import { InvalidArgumentError } from '../../core/index.js';
import type { OwnerOfRequest, OwnerOfResult, UpsertDomainRequest } from '../bbs-store.js';
import type { Domain } from '../bbs-types.js';
import type { StoreContext } from './store-context.js';

/**
 * Domains, their freshness and their owner: a domain fresh until its TTL runs out lets the
 * converger act on it; a domain owned by a system is changed only by that system's actions.
 */
export class DomainStore {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async upsertDomain(req: UpsertDomainRequest): Promise<Domain> {
    if (!req.domain) throw new InvalidArgumentError('domain must not be empty', { field: 'domain' });
    if (req.owner === '') throw new InvalidArgumentError('owner must not be empty', { field: 'owner' });
    return this.#ctx.mutate('upsertDomain', async (tx) => {
      // ttl 0 = fresh until the end of time (Diego's "no TTL").
      const fresh_until =
        req.ttl_ms > 0 ? new Date(tx.nowMs + req.ttl_ms).toISOString() : '9999-12-31T23:59:59.999Z';
      // An upsert without an owner (a plain `PUT /v1/domains/x`) never frees an owned domain.
      const row = await tx.db
        .insertInto('domains')
        .values({ domain: req.domain, fresh_until, owner: req.owner ?? null })
        .onConflict((oc) =>
          oc.column('domain').doUpdateSet(req.owner ? { fresh_until, owner: req.owner } : { fresh_until }),
        )
        .returningAll()
        .executeTakeFirstOrThrow();
      return toDomain(row);
    });
  }

  async listDomains(): Promise<Domain[]> {
    const now = this.#ctx.now().toISOString();
    const rows = await this.#ctx.db
      .selectFrom('domains')
      .selectAll()
      .where('fresh_until', '>', now)
      .orderBy('domain')
      .execute();
    return rows.map(toDomain);
  }

  async ownerOf(req: OwnerOfRequest): Promise<OwnerOfResult> {
    const db = this.#ctx.db;
    let row: { owner: string | null } | undefined;
    if ('domain' in req) {
      row = await db
        .selectFrom('domains')
        .select('owner')
        .where('domain', '=', req.domain)
        .executeTakeFirst();
    } else if ('process_guid' in req) {
      row = await db
        .selectFrom('desired_lrps')
        .innerJoin('domains', 'domains.domain', 'desired_lrps.domain')
        .select('domains.owner')
        .where('desired_lrps.process_guid', '=', req.process_guid)
        .executeTakeFirst();
    } else {
      row = await db
        .selectFrom('tasks')
        .innerJoin('domains', 'domains.domain', 'tasks.domain')
        .select('domains.owner')
        .where('tasks.task_guid', '=', req.task_guid)
        .executeTakeFirst();
    }
    return { owner: row?.owner ?? null };
  }
}

function toDomain(row: { domain: string; fresh_until: string; owner: string | null }): Domain {
  return {
    domain: row.domain,
    fresh_until: row.fresh_until,
    ...(row.owner !== null ? { owner: row.owner } : {}),
  };
}
