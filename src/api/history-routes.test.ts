import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { CellEventJournal, HistoryClient } from '../history/index.js';
import { launchOf } from '../testing/history-store-contract.js';
import { adminTokenPath } from './auth/token-store.js';
import type { TokenTables } from './auth/token-tables.js';
import { buildApp } from './build-app.js';
import { createHistoryServerParts, type HistoryServerParts } from './history-server-parts.js';

const at = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s)).toISOString();

describe('history API with token auth', () => {
  let dir: string;
  let store: SqlBbsStore;
  let parts: HistoryServerParts;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let admin: string;
  let operator: string;
  let viewer: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-hist-api-'));
    store = await openBbsStore(':memory:');
    // The webhook receivers of these cases are on 127.0.0.1.
    parts = await createHistoryServerParts(store, {
      auth: 'tokens',
      dataDir: dir,
      allowPrivateCallbacks: true,
    });
    app = await buildApp({ store, auth: parts.auth, plugins: [parts.plugin] });
    admin = readFileSync(adminTokenPath(dir), 'utf8').trim();
    operator = (await parts.tokens.create({ role: 'operator', name: 'cell-1' })).token;
    viewer = (await parts.tokens.create({ role: 'viewer', name: 'vera' })).token;
  });
  after(async () => {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const call = (method: 'GET' | 'POST', url: string, token?: string, payload?: object) =>
    app.inject({
      method,
      url,
      ...(payload ? { payload } : {}),
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });

  it('writes the first admin token to <data dir>/admin.token with mode 0600, and keeps it on restart', async () => {
    assert.equal(statSync(adminTokenPath(dir)).mode & 0o777, 0o600);
    assert.match(admin, /^berth_[A-Za-z0-9_-]{43}$/);
    const again = await createHistoryServerParts(store, { auth: 'tokens', dataDir: dir });
    assert.equal(again.adminToken, admin);
  });

  it('stores only the sha256 of a token', async () => {
    const rows = await store.backend.read((tx) =>
      tx.withTables<TokenTables>().selectFrom('api_tokens').select('token_hash').execute(),
    );
    assert.ok(rows.every((r) => /^[0-9a-f]{64}$/.test(r.token_hash)));
    assert.ok(!rows.some((r) => r.token_hash.includes(admin)));
  });

  it('no token or an unknown token is 401 with a JSON error', async () => {
    for (const [token, message] of [
      [undefined, /Missing bearer token/],
      ['berth_nope', /Invalid or revoked token/],
    ] as const) {
      const res = await call('GET', '/v1/containers', token);
      assert.equal(res.statusCode, 401);
      assert.equal(res.json().code, 'unauthenticated');
      assert.match(res.json().message, message);
    }
    const malformed = await app.inject({
      method: 'GET',
      url: '/v1/containers',
      headers: { authorization: 'Basic eA==' },
    });
    assert.equal(malformed.statusCode, 401);
    // The BBS's own routes are guarded by the same hook.
    assert.equal((await call('POST', '/v1/internal/list_actual_lrps', undefined, {})).statusCode, 401);
  });

  it('/healthz and /metrics stay open', async () => {
    assert.equal((await call('GET', '/healthz')).statusCode, 200);
    assert.equal((await call('GET', '/metrics')).statusCode, 200);
  });

  it('viewers read but cannot mutate (403); operators mutate; only admins manage tokens', async () => {
    assert.equal((await call('GET', '/v1/containers', viewer)).statusCode, 200);
    assert.equal((await call('POST', '/v1/internal/list_actual_lrps', viewer, {})).statusCode, 200);
    const denied = await call('POST', '/v1/containers/events', viewer, { records: [] });
    assert.equal(denied.statusCode, 403);
    assert.equal(denied.json().code, 'forbidden');
    assert.match(denied.json().message, /role viewer is not allowed, operator or above is required/);
    assert.equal((await call('POST', '/v1/internal/remove_cell', viewer, { cell_id: 'x' })).statusCode, 403);
    assert.equal((await call('POST', '/v1/containers/events', operator, { records: [] })).statusCode, 200);
    assert.equal((await call('POST', '/v1/tokens', operator, { role: 'viewer' })).statusCode, 403);
    const created = await call('POST', '/v1/tokens', admin, { role: 'viewer', name: 'new' });
    assert.equal(created.statusCode, 201);
    assert.equal((await call('GET', '/v1/whoami', created.json().token)).json().user, 'new');
    assert.equal((await call('POST', '/v1/tokens', admin, { role: 'root' })).statusCode, 400);
    const expiring = await call('POST', '/v1/tokens', admin, { role: 'viewer', expires_in_s: 3600 });
    assert.equal(expiring.statusCode, 201);
    assert.ok(Date.parse(expiring.json().expires_at) > Date.now(), 'an expiry in the future');
    assert.equal((await call('GET', '/v1/whoami', expiring.json().token)).statusCode, 200);
    const badExpiry = await call('POST', '/v1/tokens', admin, { role: 'viewer', expires_in_s: 0 });
    assert.equal(badExpiry.statusCode, 400);
    assert.match(badExpiry.json().message, /expires_in_s/);
  });

  it('pages tokens and subscriptions with limit + cursor, oldest first; a bad limit is a 400', async () => {
    for (let i = 0; i < 3; i++)
      assert.equal(
        (await call('POST', '/v1/subscriptions', operator, { url: `https://hooks.example.com/${i}` }))
          .statusCode,
        201,
      );
    for (const [path, key] of [
      ['/v1/tokens', 'tokens'],
      ['/v1/subscriptions', 'subscriptions'],
    ] as const) {
      const whole = (await call('GET', `${path}?limit=1000`, admin)).json()[key] as { id: string }[];
      assert.ok(whole.length >= 3, path);
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = (await call('GET', `${path}?limit=2${cursor ? `&cursor=${cursor}` : ''}`, admin)).json();
        assert.ok(page[key].length <= 2);
        seen.push(...page[key].map((r: { id: string }) => r.id));
        cursor = page.next_cursor;
      } while (cursor);
      assert.deepEqual(
        seen,
        whole.map((r) => r.id),
        path,
      );
      const bad = await call('GET', `${path}?limit=0`, admin);
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().details.field, 'limit');
    }
  });

  it('ingests a batch idempotently and serves the container with its history', async () => {
    const client = new HistoryClient('http://unused', {
      token: operator,
      fetch: async (url, init) => {
        const res = await app.inject({
          method: (init?.method ?? 'GET') as 'GET',
          url: String(url).replace('http://unused', ''),
          headers: init?.headers as Record<string, string>,
          ...(init?.body ? { payload: String(init.body) } : {}),
        });
        return new Response(res.statusCode === 204 ? null : res.body, { status: res.statusCode });
      },
    });
    const records = [
      {
        type: 'launch' as const,
        container: launchOf('api-1', { system: 'shop' }),
        external_timestamp: at(1),
      },
      {
        type: 'event' as const,
        container_id: 'api-1',
        event: 'start',
        external_timestamp: at(2),
        entity_type: 'event' as const,
      },
    ];
    assert.deepEqual(await client.ingest(records), { recorded: 2, duplicates: 0 });
    assert.deepEqual(await client.ingest(records), { recorded: 0, duplicates: 2 });
    await client.recordAction('api-1', 'Killed', 'berth kill');
    const c = await client.getContainer('api-1');
    assert.equal(c.status, 'Killed');
    assert.deepEqual(
      c.history.map((h) => [h.status, h.entity_type, h.entity_id]),
      [
        ['Created', 'system', null],
        ['Running', 'event', null],
        ['Killed', 'user', 'cell-1'],
      ],
    );
    const page = await client.listContainers({ system: 'shop', status: 'Killed' });
    assert.deepEqual(
      page.containers.map((x) => x.id),
      ['api-1'],
    );
    const bad = await call('POST', '/v1/containers/events', operator, {
      records: [{ type: 'event', container_id: 'x' }],
    });
    assert.equal(bad.statusCode, 400);
    assert.equal((await call('GET', '/v1/containers/nope', viewer)).statusCode, 404);
    const sub = await call('POST', '/v1/subscriptions', operator, {
      url: 'http://127.0.0.1:9/hook',
      statuses: ['Failed'],
    });
    assert.equal(sub.statusCode, 201);
    const log = await call('GET', `/v1/subscriptions/${sub.json().id}`, viewer);
    assert.deepEqual(log.json().counts, { pending: 0, delivered: 0, failed: 0 });
  });
});

describe('nothing observed is lost while the server is down', () => {
  it('stop the server, crash a container, start the server: the full history arrives', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-hist-outage-'));
    const db = join(dir, 'bbs.sqlite3');
    const serve = async () => {
      const store = await openBbsStore(db);
      const parts = await createHistoryServerParts(store, { auth: 'none' });
      const app = await buildApp({ store, auth: parts.auth, plugins: [parts.plugin] });
      await app.listen({ host: '127.0.0.1', port: 0 });
      const address = app.server.address();
      const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const close = async () => {
        await app.close();
        await store.close();
      };
      return { url, close };
    };
    let server = await serve();
    let url = server.url;
    const journal = new CellEventJournal({ dir: join(dir, 'journal') });
    const controller = new AbortController();
    const errors: unknown[] = [];
    const loop = journal.runDelivery({
      signal: controller.signal,
      backoff: { initialMs: 20, capMs: 100, jitter: true },
      post: async (batch) => {
        await new HistoryClient(url).ingest(batch);
      },
      onError: (err) => errors.push(err),
    });
    try {
      journal.recordLaunch(launchOf('crash-1'), at(1));
      journal.record({
        container_id: 'crash-1',
        event: 'start',
        external_timestamp: at(2),
        entity_type: 'event',
      });
      const until = async (check: () => Promise<boolean>) => {
        for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 25));
      };
      await until(async () => journal.pending().length === 0);
      await server.close();
      // The container crashes while no server listens.
      journal.record({
        container_id: 'crash-1',
        event: 'die',
        external_timestamp: at(3),
        exit_code: 137,
        entity_type: 'event',
      });
      journal.recordFinalization({
        type: 'finalization',
        container_id: 'crash-1',
        exit_code: 137,
        logs: 'bye\n',
        logs_size: 4,
        logs_truncated: false,
        outputs: [],
        error: null,
      });
      await until(async () => errors.length >= 2);
      assert.equal(journal.pending().length, 2);
      server = await serve();
      url = server.url;
      await until(async () => journal.pending().length === 0);
      const c = await new HistoryClient(url).getContainer('crash-1');
      assert.deepEqual(
        c.history.map((h) => [h.status, h.external_timestamp, h.exit_code]),
        [
          ['Created', at(1), null],
          ['Running', at(2), null],
          ['die', at(3), 137],
          ['Failed', null, 137],
        ],
      );
      assert.equal(c.status, 'Failed');
      assert.equal((await new HistoryClient(url).getLogs('crash-1')).text, 'bye\n');
    } finally {
      controller.abort();
      await loop;
      journal.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
