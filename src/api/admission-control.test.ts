import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BbsClient } from '../bbs/index.js';
import { isBerthError } from '../core/index.js';
import { desiredDefinition, desiredTask } from '../testing/bbs-fixtures.js';
import { type BbsServer, startBbsServer } from './berth-server.js';

/**
 * Issue 20's overload rule: a burst beyond what the server can place is queued up to a bound (4
 * start requests here, and no auctioneer, so nothing is placed), then creates are answered 429
 * with Retry-After while reads, deletes and /healthz keep answering; once the queue drains,
 * creates are accepted again.
 */
describe('admission control: 429 with Retry-After past the pending-start bound', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-admission-'));
  let server: BbsServer;
  const post = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  before(async () => {
    server = await startBbsServer({
      db: join(dir, 'bbs.sqlite3'),
      listen: '127.0.0.1:0',
      logger: false,
      auth: 'none',
      maxPendingStarts: 4,
    });
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('queues up to the bound, then refuses creates (public and internal) but not reads, deletes or /healthz', async () => {
    assert.equal((await post('/v1/desired_lrps', desiredDefinition('a', 3))).status, 201);
    assert.equal((await post('/v1/tasks', desiredTask('t1'))).status, 201);
    assert.equal(await server.store.countPendingStarts(100), 4);

    const refused = await post('/v1/desired_lrps', desiredDefinition('b', 1));
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '1');
    const body = (await refused.json()) as { code: string; details: Record<string, unknown> };
    assert.equal(body.code, 'unavailable');
    assert.deepEqual(body.details, { pending_starts: 4, max_pending_starts: 4 });
    assert.equal((await post('/v1/tasks', desiredTask('t2'))).status, 429);
    // BbsClient (cells, the CLI) sees a retryable `unavailable`.
    await assert.rejects(
      new BbsClient(server.url).desireTask(desiredTask('t3')),
      (err: unknown) => isBerthError(err) && err.code === 'unavailable',
    );
    assert.equal(await server.store.countPendingStarts(100), 4, 'nothing refused was queued');

    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${server.url}/v1/desired_lrps/a`)).status, 200);
    assert.equal((await fetch(`${server.url}/v1/tasks/t1`)).status, 200);

    // The auctioneer placed the work: its requests are acknowledged and creates come back.
    const lrps = await server.store.takeStartRequests({ limit: 10, visibility_ms: 30_000 });
    await server.store.ackStartRequests({ ids: lrps.flatMap((d) => d.ids) });
    assert.equal(await server.store.countPendingStarts(100), 1);
    assert.equal((await post('/v1/desired_lrps', desiredDefinition('b', 1))).status, 201);
  });
});
