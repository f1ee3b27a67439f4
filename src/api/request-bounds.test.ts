import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { limits } from '../core/index.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { type BbsServer, startBbsServer } from './berth-server.js';

/**
 * Issue 17, findings 2, 3, 9 and 10: the requests that took the server down (or answered 500 on
 * PostgreSQL) are 400s naming the field and its bound, the same on both backends, with nothing
 * written; and a schema-valid minimal body is stored with its defaults on both.
 */
const backends: ReadonlyArray<{ name: string; skip?: string | undefined; db: () => Promise<string> }> = [
  { name: 'SQLite', db: async () => ':memory:' },
  {
    name: 'PostgreSQL',
    ...(postgresSkipReason() !== undefined ? { skip: postgresSkipReason() } : {}),
    db: async () => {
      postgres = await startPostgres('berth_bounds');
      return postgres.url;
    },
  },
];
let postgres: PostgresServer | undefined;
/** An error body (code, message, details) or a resource: the fields each case reads. */
type Answer = { code: string; message: string; details: Record<string, unknown> } & Record<string, unknown>;

for (const backend of backends) {
  describe(`request bounds on ${backend.name}`, { ...(backend.skip ? { skip: backend.skip } : {}) }, () => {
    let server: BbsServer;
    before(async () => {
      server = await startBbsServer({
        db: await backend.db(),
        listen: '127.0.0.1:0',
        auth: 'none',
        logger: false,
        systems: true,
      });
    });
    after(async () => {
      await server?.close();
      await postgres?.stop();
      postgres = undefined;
    });

    const send = async (method: string, path: string, body?: string, type = 'application/json') => {
      const res = await fetch(`${server.url}${path}`, {
        method,
        ...(body !== undefined ? { body, headers: { 'content-type': type } } : {}),
        signal: AbortSignal.timeout(20_000),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : {}) as Answer };
    };
    const lrp = (fields: string) =>
      `{"process_guid":"p-${Math.random().toString(36).slice(2)}","domain":"d","image":"i",${fields}}`;
    const assertRefused = (res: { status: number; body: Answer }, field: string, bound?: number) => {
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.code, 'invalid_argument');
      assert.equal(res.body.details.field, field, JSON.stringify(res.body));
      assert.match(res.body.message, new RegExp(field.replace(/\./g, '\\.')));
      if (bound !== undefined) {
        assert.equal(res.body.details.limit, bound);
        assert.match(res.body.message, new RegExp(String(bound)));
      }
    };

    it('POST /v1/desired_lrps with instances 9007199254740993 is a 400 naming instances and its bound', async () => {
      const res = await send('POST', '/v1/desired_lrps', lrp('"instances":9007199254740993'));
      assertRefused(res, 'instances', limits.maxInstances);
      assert.deepEqual((await send('GET', '/v1/desired_lrps')).body, { desired_lrps: [] });
      assert.deepEqual((await send('GET', '/v1/actual_lrps')).body, { actual_lrps: [] });
    });

    it('PATCH with instances 9007199254740993 is a 400 and changes nothing', async () => {
      const created = await send(
        'POST',
        '/v1/desired_lrps',
        '{"process_guid":"patched","domain":"d","image":"i","instances":1}',
      );
      assert.equal(created.status, 201);
      const res = await send('PATCH', '/v1/desired_lrps/patched', '{"instances":9007199254740993}');
      assertRefused(res, 'instances', limits.maxInstances);
      assert.equal((await send('GET', '/v1/desired_lrps/patched')).body.instances, 1);
      assert.equal((await send('DELETE', '/v1/desired_lrps/patched')).status, 204);
    });

    it('a system deploy with a huge count is a 400 and writes nothing', async () => {
      // The number, as its client sent it (as a JS number it would already be 2^53).
      const definition = '{"system":"huge","services":{"/web":{"image":"i","instances":9007199254740993}}}';
      const res = await send('POST', '/v1/deploys', `{"definition":${definition}}`);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.deepEqual(res.body.details.problems, [
        {
          path: '/web',
          field: 'instances',
          message: `expected integer to be less or equal to ${limits.maxInstances}`,
        },
      ]);
      const yaml =
        'system: huge\nservices:\n  /web: {image: i, instances: 6000}\n  /side: {image: i, subordinate_to: /web}\n';
      const units = await send('POST', '/v1/deploys', yaml, 'application/yaml');
      assert.equal(units.status, 400, JSON.stringify(units.body));
      assert.match(units.body.message, new RegExp(`12000 units .* at most ${limits.maxSystemUnits}`));
      assert.deepEqual((await send('GET', '/v1/systems')).body, { systems: [] });
      assert.deepEqual((await send('GET', '/v1/desired_lrps')).body, { desired_lrps: [] });
    });

    it('ttl_ms at 2^53 is a 400, not "Invalid time value"', async () => {
      assertRefused(
        await send('PUT', '/v1/domains/d', `{"ttl_ms":${2 ** 53}}`),
        'ttl_ms',
        limits.maxDurationMs,
      );
      assertRefused(
        await send('POST', '/v1/internal/acquire_lease', `{"name":"l","holder":"h","ttl_ms":${2 ** 53}}`),
        'ttl_ms',
        limits.maxDurationMs,
      );
    });

    it('routes nested 20,000 deep is a 400', async () => {
      const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
      const res = await send('POST', '/v1/desired_lrps', lrp(`"instances":1,"routes":{"r":${deep}}`));
      assertRefused(res, 'body', limits.maxJsonDepth);
    });

    it('routes past 128 KiB of JSON are a 400 naming routes', async () => {
      const big = JSON.stringify({ r: Array.from({ length: 20 }, () => 'x'.repeat(10_000)) });
      assertRefused(await send('POST', '/v1/desired_lrps', lrp(`"instances":1,"routes":${big}`)), 'routes');
    });

    it('a guid with a lone surrogate is refused (so none is stored that cannot be deleted)', async () => {
      const res = await send(
        'POST',
        '/v1/desired_lrps',
        '{"process_guid":"a\\ud800","domain":"d","image":"i","instances":1}',
      );
      assertRefused(res, 'process_guid');
      assertRefused(
        await send('POST', '/v1/tasks', '{"task_guid":"\\udc00t","domain":"d","image":"i"}'),
        'task_guid',
      );
      // Percent-encoded, a lone surrogate is not UTF-8 at all: refused as a bad URL.
      const byPath = await send('DELETE', '/v1/desired_lrps/a%ED%A0%80');
      assert.equal(byPath.status, 400);
      assert.equal(byPath.body.code, 'invalid_argument');
    });

    it('NUL in any string, key or path is a 400, the same on both backends', async () => {
      assertRefused(
        await send('POST', '/v1/desired_lrps', lrp('"instances":1,"annotation":"a\\u0000b"')),
        'annotation',
      );
      assertRefused(
        await send('POST', '/v1/desired_lrps', lrp('"instances":1,"env":{"A\\u0000":"x"}')),
        'env',
      );
      assertRefused(await send('PUT', '/v1/domains/d%00x', '{"ttl_ms":1}'), 'domain');
      assertRefused(await send('GET', '/v1/desired_lrps?domain=a%00'), 'domain');
    });

    it('integers past 2^31 and strings past their length are 400s, not database errors', async () => {
      assertRefused(
        await send(
          'POST',
          '/v1/internal/claim_actual_lrp',
          `{"process_guid":"p","index":0,"expected":{"epoch":"e","index":${2 ** 31}},"instance_key":{"instance_guid":"i","cell_id":"c"}}`,
        ),
        'expected.index',
        limits.maxInt32,
      );
      assertRefused(
        await send('POST', '/v1/desired_lrps', lrp('"instances":1,"memory_mb":4294967296')),
        'memory_mb',
      );
      const domain = 'd'.repeat(1024 * 1024);
      assertRefused(await send('PUT', `/v1/domains/${domain.slice(0, 700)}`, '{"ttl_ms":1}'), 'domain');
      // A guid as long as the API accepts is reachable by path.
      const long = 'g'.repeat(limits.maxNameLength);
      assert.equal((await send('GET', `/v1/desired_lrps/${long}`)).status, 404);
      assertRefused(
        await send('POST', '/v1/internal/upsert_domain', `{"domain":"${domain}","ttl_ms":1}`),
        'domain',
        limits.maxNameLength,
      );
      assertRefused(await send('GET', `/v1/events?after=${'9'.repeat(30)}-1`), 'after');
    });

    it('a schema-valid minimal POST /v1/internal/desire_lrp and desire_task store their defaults', async () => {
      const res = await send(
        'POST',
        '/v1/internal/desire_lrp',
        '{"process_guid":"minimal","domain":"d","image":"i","instances":0}',
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.routes, {});
      assert.deepEqual(res.body.env, {});
      assert.equal(res.body.start_timeout_s, 60);
      const task = await send(
        'POST',
        '/v1/internal/desire_task',
        '{"task_guid":"minimal","domain":"d","image":"i"}',
      );
      assert.equal(task.status, 200, JSON.stringify(task.body));
      assert.equal(task.body.result_file, '');
    });

    it('answers /healthz after all of it', async () => {
      assert.equal((await send('GET', '/healthz')).status, 200);
    });
  });
}
