import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../api/build-app.js';
import { BbsClient, openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { desiredDefinition } from '../testing/bbs-fixtures.js';
import { type RouteSource, storeRouteSource } from './route-feed.js';
import { type RunningRouter, startRouter } from './router.js';

const host = 'app.feed.berth.localhost';

function get(port: number, hostHeader = host): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host: hostHeader } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The route table kept from a real store's events (SQLite), through the server's SSE stream
 * (`berth router --bbs URL`: BbsClient) and in-process (the router beside `berth server`); the
 * instances are played by hand with real host addresses, the backend a local HTTP server.
 */
for (const via of ['BbsClient over HTTP (berth router)', 'the store in-process (berth server)'] as const) {
  describe(`router fed by the BBS: ${via}`, () => {
    let store: SqlBbsStore;
    let app: Awaited<ReturnType<typeof buildApp>>;
    let backend: Server;
    let router: RunningRouter;
    let backendPort = 0;
    const guid = `feed-${via.startsWith('Bbs') ? 'http' : 'local'}`;

    before(async () => {
      store = await openBbsStore(':memory:');
      app = await buildApp({ store, eventPollMs: 50, onEvents: (l) => store.onEvents(l) });
      await app.listen({ host: '127.0.0.1', port: 0 });
      backend = createServer((_req, res) => res.end('backend'));
      await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
      backendPort = (backend.address() as AddressInfo).port;
      await store.heartbeatCell({
        presence: {
          cell_id: 'c1',
          zone: 'z1',
          capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
          rep_url: 'http://127.0.0.1:1',
          placement_tags: [],
        },
        ttl_ms: 60_000,
      });
      // An LRP routed before the router starts: it comes from the snapshot, not from an event.
      await store.desireLRP(
        desiredDefinition('early', 1, { routes: [{ hostname: 'early.feed.berth.localhost', port: 8080 }] }),
      );
      const source: RouteSource = via.startsWith('Bbs')
        ? new BbsClient(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`)
        : storeRouteSource(store, (l) => store.onEvents(l), 50);
      router = await startRouter({ source, listen: '127.0.0.1:0', cellPollMs: 100 });
      await router.synced;
    });
    after(async () => {
      await router.close();
      await app.close();
      await store.close();
      backend.closeAllConnections();
      await new Promise((resolve) => backend.close(resolve));
    });

    it('a snapshot route answers 503 until an instance runs; events add and remove the instance within 1 s', async () => {
      assert.equal((await get(router.port, 'early.feed.berth.localhost')).status, 503);
      await store.desireLRP(desiredDefinition(guid, 1, { routes: [{ hostname: host, port: 8080 }] }));
      const unclaimed = (await store.listActualLRPs({ process_guid: guid }))[0];
      assert.ok(unclaimed);
      const key = { instance_guid: 'ig-1', cell_id: 'c1' };
      const claimed = await store.claimActualLRP({
        process_guid: guid,
        index: 0,
        expected: unclaimed.modification_tag,
        instance_key: key,
      });
      await until('503 for a CLAIMED instance', async () =>
        (await get(router.port)).status === 503 ? true : undefined,
      );
      const started = await store.startActualLRP({
        process_guid: guid,
        index: 0,
        expected: claimed.modification_tag,
        instance_key: key,
        net_info: { address: '127.0.0.1', ports: [{ container_port: 8080, host_port: backendPort }] },
      });
      const t0 = Date.now();
      await until('the instance in the table', async () =>
        (await get(router.port)).text === 'backend' ? true : undefined,
      );
      assert.ok(Date.now() - t0 < 1000, `${Date.now() - t0} ms to enter the table`);
      await store.crashActualLRP({
        process_guid: guid,
        index: 0,
        expected: started.modification_tag,
        instance_key: key,
        state: 'CRASHED',
        crash_count: 1,
        last_crashed_at: new Date().toISOString(),
        crash_reason: 'test crash',
      });
      const t1 = Date.now();
      await until('503 after the crash', async () =>
        (await get(router.port)).status === 503 ? true : undefined,
      );
      assert.ok(Date.now() - t1 < 1000, `${Date.now() - t1} ms to leave the table`);
      await store.removeDesiredLRP({ process_guid: guid });
      await until('404 once the LRP is gone', async () =>
        (await get(router.port)).status === 404 ? true : undefined,
      );
    });

    it('an instance whose cell disappears leaves the table within 1 s', async () => {
      const other = `${guid}-cell`;
      await store.desireLRP(
        desiredDefinition(other, 1, { routes: [{ hostname: `cell.${host}`, port: 8080 }] }),
      );
      const [a] = await store.listActualLRPs({ process_guid: other });
      assert.ok(a);
      const key = { instance_guid: 'ig-2', cell_id: 'c1' };
      const claimed = await store.claimActualLRP({
        process_guid: other,
        index: 0,
        expected: a.modification_tag,
        instance_key: key,
      });
      await store.startActualLRP({
        process_guid: other,
        index: 0,
        expected: claimed.modification_tag,
        instance_key: key,
        net_info: { address: '127.0.0.1', ports: [{ container_port: 8080, host_port: backendPort }] },
      });
      await until('routed', async () =>
        (await get(router.port, `cell.${host}`)).status === 200 ? true : undefined,
      );
      await store.removeCell({ cell_id: 'c1' });
      const t0 = Date.now();
      await until('gone with its cell', async () =>
        (await get(router.port, `cell.${host}`)).status === 503 ? true : undefined,
      );
      assert.ok(Date.now() - t0 < 1000, `${Date.now() - t0} ms`);
    });
  });
}

describe('routes on the BBS API: bad input is a 400 naming the field', () => {
  let store: SqlBbsStore;
  let app: Awaited<ReturnType<typeof buildApp>>;
  before(async () => {
    store = await openBbsStore(':memory:');
    app = await buildApp({ store });
  });
  after(async () => {
    await app.close();
    await store.close();
  });
  const lrp = (guid: string, routes: unknown, ports = [8080]) => ({
    process_guid: guid,
    domain: 'd',
    image: 'bb:1',
    instances: 1,
    ports,
    routes,
  });
  const desire = (body: unknown) =>
    app.inject({ method: 'POST', url: '/v1/desired_lrps', payload: body as object });

  it('a hostname that is not a DNS name', async () => {
    for (const hostname of ['bad_host.example', 'UPPER.example', '-x.example', 'a..b', 'a b', '*', 'x.*.y']) {
      const res = await desire(lrp('bad', [{ hostname, port: 8080 }]));
      assert.equal(res.statusCode, 400, `${hostname}: ${res.body}`);
      assert.match(res.json().message, /routes\.http\[0\]\.hostname/, res.body);
    }
  });

  it('a route to a port the LRP does not expose, on desire and on update', async () => {
    const res = await desire(lrp('port', [{ hostname: 'a.b.berth.localhost', port: 9090 }]));
    assert.equal(res.statusCode, 400);
    assert.match(
      res.json().message,
      /routes\.http\[0\]\.port 9090 is not a port the LRP exposes \(ports: 8080\)/,
    );
    assert.equal(
      (await desire(lrp('port', [{ hostname: 'a.b.berth.localhost', port: 8080 }]))).statusCode,
      201,
    );
    const update = await app.inject({
      method: 'PATCH',
      url: '/v1/desired_lrps/port',
      payload: { routes: [{ hostname: 'a.b.berth.localhost', port: 9090 }] },
    });
    assert.equal(update.statusCode, 400);
    assert.match(update.json().message, /routes\.http\[0\]\.port/);
  });

  it('duplicate routes across LRPs are allowed (shared); the array is stored as {http: [...]}', async () => {
    const route = { hostname: '*.shared.berth.localhost', port: 8080, path: '/api' };
    const one = await desire(lrp('dup-1', [route]));
    const two = await desire(lrp('dup-2', { http: [route], 'other-kind': { anything: 1 } }));
    assert.equal(one.statusCode, 201, one.body);
    assert.equal(two.statusCode, 201, two.body);
    assert.deepEqual(one.json().routes, { http: [route] });
    assert.deepEqual(two.json().routes, { http: [route], 'other-kind': { anything: 1 } });
  });

  it('a route entry with a bad shape or a path without "/"', async () => {
    const shape = await desire(
      lrp('shape', { http: [{ hostname: 'a.berth.localhost', port: 8080, weight: 3 }] }),
    );
    assert.equal(shape.statusCode, 400);
    assert.match(shape.json().message, /routes\.http\[0\]\.weight/);
    const path = await desire(lrp('path', [{ hostname: 'a.berth.localhost', port: 8080, path: 'api' }]));
    assert.equal(path.statusCode, 400);
    assert.match(path.json().message, /routes\.http\[0\]\.path/);
  });
});
