import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import { BbsClient } from '../bbs/index.js';
import { isBerthError } from '../core/index.js';
import { desiredDefinition, desiredTask } from '../testing/bbs-fixtures.js';
import { installAdmissionControl } from './admission-control.js';
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

/**
 * The count is not read for every create: on PostgreSQL each read waits for a pooled connection.
 * A bare app with the hook and a counter in place of the database.
 */
describe('admission control reads the pending starts only when what it knows may not do', () => {
  const setup = async (bound: number, counts: number[]) => {
    let clock = 0;
    let reads = 0;
    const app = Fastify();
    installAdmissionControl(app, {
      maxPendingStarts: bound,
      now: () => clock,
      pendingStarts: async () => counts[Math.min(reads++, counts.length - 1)] ?? 0,
    });
    app.post('/v1/desired_lrps', async (_req, reply) => reply.code(201).send({}));
    app.post('/v1/tasks', async (_req, reply) => reply.code(201).send({}));
    await app.ready();
    const create = async (url = '/v1/desired_lrps') =>
      (await app.inject({ method: 'POST', url, payload: {} })).statusCode;
    return {
      app,
      create,
      reads: () => reads,
      advance: (ms: number) => {
        clock += ms;
      },
    };
  };

  it('admits creates on the last count while every admitted one at its most stays under the bound', async () => {
    // 35,000 counted at the first create. Each create admitted may add 10,000: after four the
    // estimate is 75,000, so the fifth reads.
    const t = await setup(70_000, [35_000, 35_000]);
    for (let i = 0; i < 4; i++) assert.equal(await t.create(), 201);
    assert.equal(t.reads(), 1);
    assert.equal(await t.create(), 201);
    assert.equal(t.reads(), 2);
    // A task adds one start at most.
    for (let i = 0; i < 5; i++) assert.equal(await t.create('/v1/tasks'), 201);
    assert.equal(t.reads(), 2);
    await t.app.close();
  });

  it('reads again once the count is a second old', async () => {
    const t = await setup(1_000_000, [0]);
    await t.create();
    await t.create();
    assert.equal(t.reads(), 1);
    t.advance(1000);
    await t.create();
    assert.equal(t.reads(), 2);
    await t.app.close();
  });

  it('refuses only on a count it read, and reads again for the next create', async () => {
    const t = await setup(20_000, [5_000, 20_000, 19_999]);
    assert.equal(await t.create(), 201);
    // 5,000 + 10,000 < 20,000: admitted on the estimate.
    assert.equal(await t.create(), 201);
    assert.equal(t.reads(), 1);
    // 5,000 + 20,000 ≥ 20,000: read, 20,000 counted, refused.
    assert.equal(await t.create(), 429);
    assert.equal(t.reads(), 2);
    // A refusal admits nothing: the next create reads, and 19,999 is room.
    assert.equal(await t.create(), 201);
    assert.equal(t.reads(), 3);
    await t.app.close();
  });
});
