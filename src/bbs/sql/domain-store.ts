import { InvalidArgumentError } from '../../core/index.js';
import type { UpsertDomainRequest } from '../bbs-store.js';
import type { Domain } from '../bbs-types.js';
import type { StoreContext } from './store-context.js';

/** Domains and their freshness: a domain fresh until its TTL runs out lets the converger act on it. */
export class DomainStore {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async upsertDomain(req: UpsertDomainRequest): Promise<Domain> {
    if (!req.domain) throw new InvalidArgumentError('domain must not be empty', { field: 'domain' });
    return this.#ctx.mutate('upsertDomain', async (tx) => {
      // ttl 0 = fresh until the end of time (Diego's "no TTL").
      const fresh_until =
        req.ttl_ms > 0 ? new Date(tx.nowMs + req.ttl_ms).toISOString() : '9999-12-31T23:59:59.999Z';
      await tx.db
        .insertInto('domains')
        .values({ domain: req.domain, fresh_until })
        .onConflict((oc) => oc.column('domain').doUpdateSet({ fresh_until }))
        .execute();
      return { domain: req.domain, fresh_until };
    });
  }

  async listDomains(): Promise<Domain[]> {
    const now = this.#ctx.now().toISOString();
    return this.#ctx.db
      .selectFrom('domains')
      .selectAll()
      .where('fresh_until', '>', now)
      .orderBy('domain')
      .execute();
  }
}
