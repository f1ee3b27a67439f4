import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import {
  BbsClient,
  type BbsEvent,
  defaultWorkMemoryMb,
  openBbsStore,
  type SqlBbsStore,
} from '../bbs/index.js';
import { describeBbsStoreContract, desiredDefinition } from '../testing/bbs-store-contract.js';
import { ApiMetrics } from './api-metrics.js';
import { buildApp } from './build-app.js';

// The whole contract again, through HTTP: BbsClient → fastify routes → SQLite.
describeBbsStoreContract('HTTP client over SQLite', async (clock) => {
  const store = await openBbsStore(':memory:', { now: clock.now });
  const app = await buildApp({ store });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    store: new BbsClient(`http://127.0.0.1:${port}`),
    hidesRepTokens: true,
    close: async () => {
      await app.close();
      await store.close();
    },
  };
});

describe('BBS HTTP API', () => {
  let store: SqlBbsStore;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let url: string;
  const metrics = new ApiMetrics();
  before(async () => {
    store = await openBbsStore(':memory:', { onCasConflict: metrics.casConflict });
    app = await buildApp({ store, metrics, eventPollMs: 50, onEvents: (l) => store.onEvents(l) });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  after(async () => {
    await app.close();
    await store.close();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: path, payload: body as object, headers });

  describe('malformed requests are 400 naming the field', () => {
    const cases: ReadonlyArray<[string, unknown, string]> = [
      ['instances as a string', { process_guid: 'p', domain: 'd', image: 'i', instances: '2' }, 'instances'],
      ['missing process_guid', { domain: 'd', image: 'i', instances: 1 }, 'process_guid'],
      [
        'unknown field',
        { process_guid: 'p', domain: 'd', image: 'i', instances: 1, memroy_mb: 5 },
        'memroy_mb',
      ],
      ['negative instances', { process_guid: 'p', domain: 'd', image: 'i', instances: -1 }, 'instances'],
      [
        'monitor of no known form',
        { process_guid: 'p', domain: 'd', image: 'i', instances: 1, monitor: { udp: 1 } },
        'monitor',
      ],
      [
        'command not an argv array',
        { process_guid: 'p', domain: 'd', image: 'i', instances: 1, command: 'sleep 1' },
        'command',
      ],
      // Monitor timing (issue 20): each bad value named, inside whichever form of check.
      ...(
        [
          [{ tcp: 80, timeout_ms: -1 }, 'monitor.timeout_ms'],
          [{ tcp: 80, period_ms: 0 }, 'monitor.period_ms'],
          [{ http: { port: 80 }, failure_threshold: 1_000_000 }, 'monitor.failure_threshold'],
          [{ command: ['true'], startup_grace_ms: 10 ** 12 }, 'monitor.startup_grace_ms'],
          [{ command: ['true'], failure_threshold: 0 }, 'monitor.failure_threshold'],
        ] as const
      ).map(
        ([monitor, field]) =>
          [
            `monitor ${JSON.stringify(monitor)}`,
            { process_guid: 'p', domain: 'd', image: 'i', instances: 1, monitor },
            field,
          ] as [string, unknown, string],
      ),
    ];
    for (const [name, body, field] of cases) {
      it(name, async () => {
        const res = await post('/v1/desired_lrps', body);
        assert.equal(res.statusCode, 400);
        const error = res.json() as { code: string; message: string; details: { field: string } };
        assert.equal(error.code, 'invalid_argument');
        assert.equal(error.details.field, field);
        assert.match(error.message, new RegExp(field));
      });
    }
    it('malformed JSON', async () => {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/desired_lrps',
        payload: '{bad',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'invalid_argument');
    });
    it('a bad If-Match', async () => {
      const res = await app.inject({
        method: 'PATCH',
        url: '/v1/desired_lrps/x',
        payload: { instances: 1 },
        headers: { 'if-match': 'garbage' },
      });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().details.field, 'if-match');
    });
  });

  it('monitor timing is stored and answered as given, on every form of check', async () => {
    for (const [guid, monitor] of [
      [
        'timed-tcp',
        { tcp: 8080, timeout_ms: 3000, period_ms: 2000, failure_threshold: 5, startup_grace_ms: 0 },
      ],
      ['timed-http', { http: { port: 8080, path: '/health' }, period_ms: 250 }],
      ['timed-cmd', { command: ['true'], startup_grace_ms: 30_000 }],
    ] as const) {
      const created = await post('/v1/desired_lrps', { ...desiredDefinition(guid, 1), monitor });
      assert.equal(created.statusCode, 201, created.body);
      assert.deepEqual(created.json().monitor, monitor);
      const got = await app.inject({ method: 'GET', url: `/v1/desired_lrps/${guid}` });
      assert.deepEqual(got.json().monitor, monitor);
      await app.inject({ method: 'DELETE', url: `/v1/desired_lrps/${guid}` });
    }
  });

  it('POST creates with defaults and an ETag; GET answers the same ETag; PATCH with a stale If-Match is 412', async () => {
    const created = await post('/v1/desired_lrps', {
      process_guid: 'web',
      domain: 'd',
      instances: 2,
      image: 'busybox',
      command: ['/bin/httpd', '-f'],
      monitor: { http: { port: 8080 } },
    });
    assert.equal(created.statusCode, 201);
    const body = created.json();
    assert.deepEqual(body.monitor, { http: { port: 8080, path: '/' } });
    assert.deepEqual(body.env, {});
    assert.equal(body.start_timeout_s, 60);
    const etag = created.headers.etag;
    assert.equal(etag, `"${body.modification_tag.epoch}:0"`);
    const got = await app.inject({ method: 'GET', url: '/v1/desired_lrps/web' });
    assert.equal(got.headers.etag, etag);

    const patched = await app.inject({
      method: 'PATCH',
      url: '/v1/desired_lrps/web',
      payload: { instances: 3 },
      headers: { 'if-match': String(etag) },
    });
    assert.equal(patched.statusCode, 200);
    assert.equal(patched.json().instances, 3);
    const stale = await app.inject({
      method: 'PATCH',
      url: '/v1/desired_lrps/web',
      payload: { instances: 1 },
      headers: { 'if-match': String(etag) },
    });
    assert.equal(stale.statusCode, 412);
    assert.equal(stale.json().code, 'precondition_failed');
    assert.equal(stale.json().details.current.instances, 3);

    const actuals = await app.inject({ method: 'GET', url: '/v1/actual_lrps?process_guid=web' });
    assert.equal(actuals.json().actual_lrps.length, 3);
    const duplicate = await post('/v1/desired_lrps', desiredDefinition('web', 1));
    assert.equal(duplicate.statusCode, 409);
    assert.equal(duplicate.json().code, 'already_exists');

    const removed = await app.inject({ method: 'DELETE', url: '/v1/desired_lrps/web' });
    assert.equal(removed.statusCode, 204);
    const gone = await app.inject({ method: 'GET', url: '/v1/desired_lrps/web' });
    assert.equal(gone.statusCode, 404);
    assert.equal(gone.json().code, 'not_found');
  });

  it('serves lists of tasks, cells and domains', async () => {
    const task = await post('/v1/tasks', { task_guid: 't1', domain: 'd', image: 'busybox' });
    assert.equal(task.statusCode, 201);
    assert.equal(task.json().state, 'PENDING');
    const tasks = await app.inject({ method: 'GET', url: '/v1/tasks?state=PENDING' });
    assert.deepEqual(
      tasks.json().tasks.map((t: { task_guid: string }) => t.task_guid),
      ['t1'],
    );
    const badState = await app.inject({ method: 'GET', url: '/v1/tasks?state=DONE' });
    assert.equal(badState.statusCode, 400);
    assert.deepEqual((await app.inject({ method: 'GET', url: '/v1/cells' })).json(), { cells: [] });
    const cancelled = await post('/v1/tasks/t1/cancel', {});
    assert.equal(cancelled.json().failure_reason, 'task was cancelled');
  });

  it('LRPs and tasks that name no memory get the default limit (128 MB); memory_mb 0 asks for none', async () => {
    const lrp = await post('/v1/desired_lrps', {
      process_guid: 'mem',
      domain: 'd',
      instances: 0,
      image: 'i',
    });
    assert.equal(lrp.json().memory_mb, defaultWorkMemoryMb);
    assert.equal(defaultWorkMemoryMb, 128);
    const task = await post('/v1/tasks', { task_guid: 'mem-t', domain: 'd', image: 'i' });
    assert.equal(task.json().memory_mb, defaultWorkMemoryMb);
    const unlimited = await post('/v1/tasks', { task_guid: 'mem-0', domain: 'd', image: 'i', memory_mb: 0 });
    assert.equal(unlimited.json().memory_mb, 0);
    await app.inject({ method: 'DELETE', url: '/v1/desired_lrps/mem' });
  });

  it('publishes an OpenAPI document generated from the schemas', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    assert.equal(doc.openapi, '3.0.3');
    for (const path of [
      '/v1/desired_lrps',
      '/v1/desired_lrps/{process_guid}',
      '/v1/actual_lrps',
      '/v1/events',
    ]) {
      assert.ok(doc.paths[path], `${path} is documented`);
    }
    assert.ok(doc.paths['/v1/internal/claim_actual_lrp'].post);
  });

  it('exports request counts, latencies, CAS conflicts and records per state', async () => {
    const client = new BbsClient(url);
    const d = await client.desireLRP(desiredDefinition('m1', 1));
    await client.updateDesiredLRP({
      process_guid: 'm1',
      expected: d.modification_tag,
      update: { annotation: 'a' },
    });
    await assert.rejects(
      client.updateDesiredLRP({
        process_guid: 'm1',
        expected: d.modification_tag,
        update: { annotation: 'b' },
      }),
      { code: 'cas_conflict' },
    );
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(
      text,
      /berth_http_requests_total\{method="POST",route="\/v1\/internal\/update_desired_lrp",status="409"\} 1/,
    );
    assert.match(text, /berth_http_request_duration_seconds_bucket/);
    assert.match(text, /berth_bbs_cas_conflicts_total\{operation="updateDesiredLRP"\} [1-9]/);
    assert.match(text, /berth_bbs_records\{kind="actual_lrp",state="UNCLAIMED"\} \d+/);
  });

  it('streams events over SSE and resumes with Last-Event-ID', async () => {
    const client = new BbsClient(url);
    const start = (await client.readEvents({ limit: 10_000 })).at(-1)?.id;
    const controller = new AbortController();
    const seen: BbsEvent[] = [];
    const reading = (async () => {
      for await (const event of client.streamEvents({
        ...(start ? { after: start } : {}),
        signal: controller.signal,
      })) {
        seen.push(event);
        if (seen.length === 3) controller.abort();
      }
    })();
    await client.desireLRP(desiredDefinition('sse', 2));
    await reading;
    assert.deepEqual(
      seen.map((e) => e.type),
      ['desired_lrp_created', 'actual_lrp_created', 'actual_lrp_created'],
    );
    // Resume after the first event: the raw stream starts with the second.
    const res = await fetch(`${url}/v1/events`, { headers: { 'last-event-id': seen[0]!.id } });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('\n\n', text.indexOf('id: ')))
      text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    assert.match(text, new RegExp(`id: ${seen[1]!.id}\nevent: actual_lrp_created`));
    const bad = await fetch(`${url}/v1/events?after=nonsense`);
    assert.equal(bad.status, 400);
  });

  it('answers /healthz', async () => {
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(res.json().status, 'ok');
  });
});

describe('the request log', () => {
  it('writes a line at info for a change, at debug for a read, a heartbeat or an empty take', async () => {
    const lines: { level: number; url: string; status: number }[] = [];
    const logger = pino(
      { level: 'debug' },
      { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) },
    );
    const store = await openBbsStore(':memory:');
    const app = await buildApp({ store, logger });
    const post = (url: string, payload: object) => app.inject({ method: 'POST', url, payload });
    try {
      const presence = {
        cell_id: 'c1',
        zone: 'z1',
        capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
        rep_url: 'http://127.0.0.1:1',
        placement_tags: [],
      };
      const steps: [string, object, 'info' | 'debug'][] = [
        ['/v1/internal/heartbeat_cell', { presence, ttl_ms: 10_000 }, 'debug'],
        ['/v1/internal/desire_lrp', desiredDefinition('p1', 1), 'info'],
        ['/v1/internal/list_actual_lrps', { cell_id: 'c1' }, 'debug'],
        ['/v1/internal/take_stop_requests', { cell_id: 'c1', limit: 10, visibility_ms: 1000 }, 'debug'],
        ['/v1/internal/take_start_requests', { limit: 10, visibility_ms: 1000 }, 'info'],
        // A failed read is worth a line: the caller was refused.
        ['/v1/internal/get_desired_lrp', { process_guid: 'nope' }, 'info'],
      ];
      for (const [url, body] of steps) await post(url, body);
      const levelOf = (url: string) => {
        const line = lines.find((l) => l.url === url);
        assert.ok(line, `a line for ${url}`);
        return pino.levels.labels[line.level];
      };
      for (const [url, , level] of steps) assert.equal(levelOf(url), level, url);
    } finally {
      await app.close();
      await store.close();
    }
  });
});
