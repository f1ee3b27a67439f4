import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { adminTokenPath } from './auth/token-store.js';
import { type BbsServer, startBbsServer } from './berth-server.js';

/**
 * The server's side of `berth logs` and `berth exec` with token auth (the cells' side runs in
 * src/cli/cluster-stream.test.ts): who may do what, the history record, and the one-time ticket.
 */
describe('logs and exec on the server: roles, history, tickets', () => {
  let dir: string;
  let server: BbsServer;
  let admin: string;
  let viewer: string;
  const call = (token: string, method: string, path: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-exec-routes-'));
    server = await startBbsServer({
      db: join(dir, 'bbs.sqlite3'),
      listen: '127.0.0.1:0',
      logger: false,
      dataDir: dir,
    });
    admin = readFileSync(adminTokenPath(dir), 'utf8').trim();
    const made = await call(admin, 'POST', '/v1/tokens', { role: 'viewer', name: 'vera' });
    viewer = ((await made.json()) as { token: string }).token;
    const store = server.store;
    await store.upsertDomain({ domain: 'd', ttl_ms: 0 });
    await store.desireLRP({ process_guid: 'web', domain: 'd', image: 'busybox', instances: 2 } as never);
    // Instance 0 RUNNING on a cell whose rep is not there; instance 1 stays UNCLAIMED.
    await store.heartbeatCell({
      presence: {
        cell_id: 'cell-a',
        zone: 'z1',
        capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
        rep_url: 'http://127.0.0.1:1',
        placement_tags: [],
      },
      ttl_ms: 600_000,
    });
    const key = { process_guid: 'web', index: 0 };
    const instance_key = { instance_guid: 'ig-web-0', cell_id: 'cell-a' };
    const unclaimed = (await store.getActualLRP(key)).instance;
    assert.ok(unclaimed);
    const claimed = await store.claimActualLRP({
      ...key,
      expected: unclaimed.modification_tag,
      instance_key,
    });
    await store.startActualLRP({
      ...key,
      expected: claimed.modification_tag,
      instance_key,
      net_info: { address: '10.0.0.5', ports: [] },
    });
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('viewers read logs but may not exec; a missing app is 404 for both', async () => {
    const logs = await call(viewer, 'GET', '/v1/logs?app=web&index=1');
    assert.equal(logs.status, 200);
    assert.match(logs.headers.get('content-type') ?? '', /application\/x-ndjson/);
    assert.equal(await logs.text(), '', 'no instance of index 1 runs: an empty stream');
    const refused = await call(viewer, 'POST', '/v1/exec', { app: 'web', index: 0, command: ['true'] });
    assert.equal(refused.status, 403);
    assert.equal((await call(viewer, 'GET', '/v1/logs?app=nope')).status, 404);
    assert.equal((await call(admin, 'POST', '/v1/exec', { app: 'nope', command: ['true'] })).status, 404);
  });

  it('bad requests name their field', async () => {
    const both = await call(admin, 'POST', '/v1/exec', { app: 'web', task: 't', command: ['true'] });
    assert.equal(both.status, 400);
    assert.match(((await both.json()) as { message: string }).message, /exactly one of app or task/);
    assert.equal((await call(admin, 'POST', '/v1/exec', { app: 'web', command: [] })).status, 400);
    assert.equal((await call(admin, 'GET', '/v1/logs?app=web&tail=many')).status, 400);
    assert.equal((await call(admin, 'GET', '/v1/logs?app=web/')).status, 400);
  });

  it('an instance that is not RUNNING is 409 naming its state', async () => {
    const res = await call(admin, 'POST', '/v1/exec', { app: 'web', index: 1, command: ['true'] });
    assert.equal(res.status, 409);
    assert.match(((await res.json()) as { message: string }).message, /web\/1: it is UNCLAIMED, not RUNNING/);
  });

  it("an operator's exec is in the container's history with the user; its ticket works once", async () => {
    const res = await call(admin, 'POST', '/v1/exec', { app: 'web', index: 0, command: ['ls', '/'] });
    assert.equal(res.status, 201);
    const { path, instance_guid } = (await res.json()) as { path: string; instance_guid: string };
    assert.equal(instance_guid, 'ig-web-0');
    const record = (await (await call(admin, 'GET', '/v1/containers/ig-web-0')).json()) as {
      history: { status: string; entity_type: string; entity_id: string; message: string }[];
    };
    const item = record.history.find((h) => h.status === 'exec_start');
    assert.equal(item?.entity_type, 'user');
    assert.equal(item?.entity_id, 'admin');
    assert.match(item?.message ?? '', /ls \//);
    // The cell's rep is not there: the upgrade is refused (502), and the ticket is spent.
    const status = (p: string) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`${server.url.replace('http', 'ws')}${p}`);
        ws.once('unexpected-response', (_req, r) => resolve(r.statusCode ?? 0));
        ws.once('open', () => resolve(101));
        ws.once('error', () => {});
      });
    assert.equal(await status(path), 502);
    assert.equal(await status(path), 401);
  });
});
