import { InvalidArgumentError } from '../../core/index.js';
import type { AcquireLeaseRequest, Lease, LeaseResult, ReleaseLeaseRequest } from '../bbs-store-log.js';
import type { StoreContext } from './store-context.js';

/** Named leases with a fencing token: one holder at a time runs each cluster singleton. */
export class LeaseStore {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async acquireLease(req: AcquireLeaseRequest): Promise<LeaseResult> {
    if (!req.holder) throw new InvalidArgumentError('holder must not be empty', { field: 'holder' });
    return this.#ctx.mutate('acquireLease', async (tx) => {
      // Create the row first so that two servers racing for a new lease both end up locking it.
      await tx.db
        .insertInto('leases')
        .values({ name: req.name, holder: '', token: 0, expires_at: '' })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
      let query = tx.db.selectFrom('leases').selectAll().where('name', '=', req.name);
      if (this.#ctx.lockRows) query = query.forUpdate();
      const current = await query.executeTakeFirstOrThrow();
      const lease: Lease = { ...current, token: Number(current.token) };
      if (lease.holder !== req.holder && lease.expires_at > tx.now) return { acquired: false, lease };
      const next: Lease = {
        name: req.name,
        holder: req.holder,
        // The token changes only on a handover, so a deposed holder's token is always stale.
        token: lease.holder === req.holder ? lease.token : lease.token + 1,
        expires_at: new Date(tx.nowMs + req.ttl_ms).toISOString(),
      };
      await tx.db
        .updateTable('leases')
        .set({ holder: next.holder, token: next.token, expires_at: next.expires_at })
        .where('name', '=', req.name)
        .execute();
      return { acquired: true, lease: next };
    });
  }

  async releaseLease(req: ReleaseLeaseRequest): Promise<void> {
    await this.#ctx.mutate('releaseLease', async (tx) => {
      await tx.db
        .updateTable('leases')
        .set({ expires_at: tx.now })
        .where('name', '=', req.name)
        .where('holder', '=', req.holder)
        .execute();
    });
  }

  async listLeases(): Promise<Lease[]> {
    const rows = await this.#ctx.db.selectFrom('leases').selectAll().orderBy('name').execute();
    return rows.filter((r) => r.holder !== '').map((r) => ({ ...r, token: Number(r.token) }));
  }
}
