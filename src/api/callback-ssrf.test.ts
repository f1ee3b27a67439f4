import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { privateAddressKind } from '../core/index.js';
import { adminTokenPath } from './auth/token-store.js';
import { type BbsServer, startBbsServer } from './berth-server.js';

/** This machine's name when it resolves to a loopback address (Debian maps it to 127.0.1.1). */
async function loopbackHostname(): Promise<string | undefined> {
  try {
    const addresses = await lookup(hostname(), { all: true });
    return addresses.some((a) => privateAddressKind(a.address) === 'loopback') ? hostname() : undefined;
  } catch {
    return undefined;
  }
}

describe('callback and webhook URLs may not target the server’s own network (SSRF)', () => {
  let dir: string;
  let server: BbsServer;
  let token: string;
  let hits = 0;
  const receiver = createServer((_req, res) => {
    hits++;
    res.writeHead(200).end();
  });
  let receiverPort = 0;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-ssrf-'));
    server = await startBbsServer({
      db: join(dir, 'bbs.sqlite3'),
      listen: '127.0.0.1:0',
      logger: false,
      dataDir: dir,
      taskCallbacks: { pollMs: 50 },
    });
    token = readFileSync(adminTokenPath(dir), 'utf8').trim();
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverPort = (receiver.address() as AddressInfo).port;
  });
  after(async () => {
    await server.close();
    receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });

  it('refuses a task whose completion_callback_url is loopback, link-local or unspecified, on both routes', async () => {
    const targets = [
      `http://127.0.0.1:${receiverPort}/cb`,
      'http://localhost:8889/v1/evacuate',
      'http://[::1]:7777/',
      'http://169.254.169.254/latest/meta-data/',
      'http://0.0.0.0:1/',
    ];
    for (const [i, url] of targets.entries()) {
      const definition = {
        task_guid: `ssrf-${i}`,
        domain: 'd',
        image: 'busybox',
        completion_callback_url: url,
      };
      for (const path of ['/v1/tasks', '/v1/internal/desire_task']) {
        const res = await call('POST', path, definition);
        const body = (await res.json()) as { code: string; message: string; details: { field: string } };
        assert.equal(res.status, 400, `${path} ${url}: ${body.message}`);
        assert.equal(body.details.field, 'completion_callback_url');
      }
      assert.equal((await call('GET', `/v1/tasks/ssrf-${i}`)).status, 404, 'nothing was written');
    }
  });

  it('refuses a webhook subscription to such a URL', async () => {
    const res = await call('POST', '/v1/subscriptions', { url: 'http://169.254.169.254/hook' });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { details: { field: string } }).details.field, 'url');
    assert.equal(
      (await call('POST', '/v1/subscriptions', { url: 'https://hooks.example.com/x' })).status,
      201,
    );
  });

  it('refuses at delivery a callback host that resolves to loopback, saying why in the delivery log', async (t) => {
    const name = await loopbackHostname();
    if (!name) return t.skip(`${hostname()} does not resolve to a loopback address here`);
    const url = `http://${name}:${receiverPort}/cb`;
    const created = await call('POST', '/v1/tasks', {
      task_guid: 'resolves-to-loopback',
      domain: 'd',
      image: 'busybox',
      completion_callback_url: url,
    });
    assert.equal(created.status, 201, 'a host name is judged after DNS, at delivery');
    // Complete it as a cell would.
    const pending = await server.store.getTask({ task_guid: 'resolves-to-loopback' });
    const running = await server.store.startTask({
      task_guid: pending.task_guid,
      expected: pending.modification_tag,
      cell_id: 'c1',
    });
    await server.store.completeTask({
      task_guid: running.task_guid,
      expected: running.modification_tag,
      cell_id: 'c1',
      failed: false,
      failure_reason: '',
      result: '',
    });
    let deliveries: { outcome: string; error?: string }[] = [];
    for (let i = 0; i < 200 && deliveries.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      deliveries = (
        (await (await call('GET', '/v1/tasks/resolves-to-loopback/deliveries')).json()) as {
          deliveries: typeof deliveries;
        }
      ).deliveries;
    }
    assert.equal(deliveries.length, 1);
    assert.equal(deliveries[0]!.outcome, 'rejected');
    assert.match(deliveries[0]!.error ?? '', /^refused: .* resolves to 127\.[0-9.]+, a loopback address/);
    assert.equal(hits, 0, 'the receiver was never called');
  });
});
