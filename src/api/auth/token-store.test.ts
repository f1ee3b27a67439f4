import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openBbsStore, type SqlBbsStore } from '../../bbs/index.js';
import { createHistoryServerParts } from '../history-server-parts.js';
import { TokenStore } from './token-store.js';

describe('API tokens that expire', () => {
  let dir: string;
  let store: SqlBbsStore;
  let tokens: TokenStore;
  let nowMs = Date.UTC(2026, 10, 25, 12, 0, 0);
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-token-ttl-'));
    store = await openBbsStore(':memory:');
    // The history parts migrate the token table (history's ledger entries 2 and 13).
    await createHistoryServerParts(store, { auth: 'tokens', dataDir: dir });
    tokens = new TokenStore(store, { now: () => new Date(nowMs), cacheMs: 60_000 });
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('works until its expiry and not a moment after, even while its lookup is cached', async () => {
    const created = await tokens.create({ role: 'operator', name: 'ci', expires_in_s: 30 });
    assert.equal(created.expires_at, new Date(nowMs + 30_000).toISOString());
    assert.equal((await tokens.authenticate(created.token))?.user, 'ci');
    nowMs += 29_999;
    assert.equal((await tokens.authenticate(created.token))?.role, 'operator');
    nowMs += 1;
    assert.equal(await tokens.authenticate(created.token), undefined, 'expired at its second');
    assert.equal(
      (await tokens.list()).find((t) => t.id === created.id)?.expires_at,
      created.expires_at,
      'listed with its expiry until revoked',
    );
  });

  it('lasts until revoked without an expiry', async () => {
    const created = await tokens.create({ role: 'viewer', name: 'forever' });
    assert.equal(created.expires_at, null);
    nowMs += 10 * 365 * 86_400_000;
    assert.equal((await tokens.authenticate(created.token))?.user, 'forever');
  });

  it('refuses an expiry that is not a whole number of seconds above 0, naming the field', async () => {
    for (const bad of [0, -5, 1.5, Number.NaN])
      await assert.rejects(
        tokens.create({ role: 'viewer', expires_in_s: bad }),
        (err: Error & { details?: object }) => {
          assert.deepEqual(err.details, { field: 'expires_in_s' });
          return true;
        },
      );
  });
});
