import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { desiredDefinition } from '../testing/bbs-store-contract.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { buildApp } from './build-app.js';

for (const backend of ['SQLite', 'PostgreSQL'] as const)
  describe(`list routes page with limit + cursor: ${backend}`, {
    skip: backend === 'PostgreSQL' ? (postgresSkipReason() ?? false) : false,
  }, () => {
    let store: SqlBbsStore;
    let app: Awaited<ReturnType<typeof buildApp>>;
    let postgres: PostgresServer | undefined;
    before(async () => {
      postgres = backend === 'PostgreSQL' ? await startPostgres() : undefined;
      store = await openBbsStore(postgres?.url ?? ':memory:');
      app = await buildApp({ store });
      for (let i = 0; i < 150; i++)
        await store.desireLRP(desiredDefinition(`lrp-${String(i).padStart(3, '0')}`, i < 3 ? 2 : 0));
      for (const d of ['d1', 'd2', 'd3']) await store.upsertDomain({ domain: d, ttl_ms: 0 });
    });
    after(async () => {
      await app.close();
      await store.close();
      await postgres?.stop();
    });
    const get = async (url: string) => {
      const res = await app.inject({ method: 'GET', url });
      return { status: res.statusCode, body: res.json() };
    };

    it('answers a page of 100 by default, with next_cursor, and the rest from the cursor', async () => {
      const first = await get('/v1/desired_lrps');
      assert.equal(first.status, 200);
      assert.equal(first.body.desired_lrps.length, 100);
      assert.equal(first.body.desired_lrps[0].process_guid, 'lrp-000');
      assert.equal(typeof first.body.next_cursor, 'string');
      const second = await get(`/v1/desired_lrps?cursor=${first.body.next_cursor}`);
      assert.equal(second.body.desired_lrps.length, 50);
      assert.equal(second.body.desired_lrps[0].process_guid, 'lrp-100');
      assert.equal(second.body.next_cursor, undefined, 'the last page has no next_cursor');
      const whole = await get('/v1/desired_lrps?limit=1000');
      assert.equal(whole.body.desired_lrps.length, 150);
      assert.equal(whole.body.next_cursor, undefined);
    });

    it('walks every list in pages that cover it exactly once', async () => {
      const cases: ReadonlyArray<[string, string, (r: Record<string, unknown>) => string]> = [
        ['/v1/desired_lrps?', 'desired_lrps', (r) => String(r.process_guid)],
        ['/v1/actual_lrps?', 'actual_lrps', (r) => `${r.process_guid}/${r.index}`],
        ['/v1/domains?', 'domains', (r) => String(r.domain)],
        ['/v1/tasks?', 'tasks', (r) => String(r.task_guid)],
        ['/v1/cells?', 'cells', (r) => String(r.cell_id)],
        ['/v1/leases?', 'leases', (r) => String(r.name)],
      ];
      for (const [path, key, id] of cases) {
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await get(`${path}limit=2${cursor ? `&cursor=${cursor}` : ''}`);
          assert.equal(page.status, 200, `${path}: ${JSON.stringify(page.body)}`);
          assert.ok(page.body[key].length <= 2);
          seen.push(...page.body[key].map(id));
          cursor = page.body.next_cursor;
        } while (cursor);
        const whole = (await get(`${path}limit=1000`)).body[key].map(id);
        assert.deepEqual(seen, whole, path);
      }
    });

    it('refuses a bad limit or cursor with a 400 naming it', async () => {
      for (const url of [
        '/v1/desired_lrps?limit=0',
        '/v1/desired_lrps?limit=1001',
        '/v1/tasks?limit=-5',
        '/v1/actual_lrps?limit=abc',
        '/v1/cells?limit=99999999999',
      ]) {
        const res = await get(url);
        assert.equal(res.status, 400, url);
        assert.equal(res.body.code, 'invalid_argument', url);
        assert.equal(res.body.details.field, 'limit', url);
      }
      const desiredCursor = (await get('/v1/desired_lrps?limit=1')).body.next_cursor;
      for (const url of [
        '/v1/desired_lrps?cursor=nonsense!',
        '/v1/tasks?cursor=e30',
        // A cursor of another list (a string key where an ActualLRP's key is expected).
        `/v1/actual_lrps?cursor=${desiredCursor}`,
        '/v1/domains?cursor=',
        // A key with a NUL, which PostgreSQL could not compare.
        `/v1/desired_lrps?cursor=${Buffer.from(JSON.stringify('a\u0000b')).toString('base64url')}`,
      ]) {
        const res = await get(url);
        assert.equal(res.status, 400, url);
        assert.equal(res.body.details.field, 'cursor', `${url}: ${res.body.message}`);
      }
    });
  });
