import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  type FuzzRequest,
  fuzzableOperations,
  type OpenApiDocument,
  requestArbitrary,
  SchemaArbitraries,
} from '../testing/openapi-fuzz.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { type BbsServer, startBbsServer } from './bbs-server.js';

/**
 * Issue 17 ("Must show"): every route with a body or parameters, fed property-based requests
 * generated from the server's own OpenAPI document, on SQLite and on PostgreSQL. The server never
 * answers 5xx (nor fails to answer) and `/healthz` answers throughout.
 *
 * BERTH_FUZZ_SEED picks the seed (default fixed, so CI runs are repeatable), BERTH_FUZZ_RUNS the
 * number of requests per backend. A failure prints the seed, the path fast-check took and the
 * request, so `BERTH_FUZZ_SEED=… ` replays it.
 */
const seed = Number(process.env.BERTH_FUZZ_SEED ?? 1717);
const runs = Number(process.env.BERTH_FUZZ_RUNS ?? 700);
const requestTimeoutMs = 15_000;

const backends: ReadonlyArray<{ name: string; skip?: string | undefined; db: () => Promise<string> }> = [
  { name: 'SQLite', db: async () => ':memory:' },
  {
    name: 'PostgreSQL',
    skip: postgresSkipReason(),
    db: async () => {
      postgres = await startPostgres('berth_fuzz');
      return postgres.url;
    },
  },
];
let postgres: PostgresServer | undefined;

async function send(base: string, request: FuzzRequest): Promise<{ status: number; text: string }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), requestTimeoutMs);
  try {
    const res = await fetch(`${base}${request.url}`, {
      method: request.method,
      signal: controller.signal,
      headers: {
        ...request.headers,
        ...(request.body !== undefined ? { 'content-type': request.contentType ?? 'application/json' } : {}),
      },
      ...(request.body !== undefined ? { body: request.body } : {}),
    });
    // An event stream never ends: its status is the answer.
    if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
      controller.abort();
      return { status: res.status, text: '' };
    }
    return { status: res.status, text: (await res.text()).slice(0, 500) };
  } catch (err) {
    // No answer at all (the server died or hung) is as bad as a 500.
    return { status: 599, text: `no answer: ${(err as Error).message}` };
  } finally {
    clearTimeout(timer);
  }
}

function describeRequest(r: FuzzRequest): string {
  const body = r.body === undefined ? '' : ` body(${r.body.length} chars): ${r.body.slice(0, 300)}`;
  return `${r.method} ${r.url.slice(0, 300)}${body}`;
}

for (const backend of backends) {
  describe(`API fuzz on ${backend.name} (seed ${seed}, ${runs} requests)`, {
    ...(backend.skip ? { skip: backend.skip } : {}),
  }, () => {
    let server: BbsServer;
    let doc: OpenApiDocument;
    before(async () => {
      server = await startBbsServer({
        db: await backend.db(),
        listen: '127.0.0.1:0',
        auth: 'none',
        logger: false,
        systems: true,
      });
      doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as OpenApiDocument;
    });
    after(async () => {
      await server?.close();
      await postgres?.stop();
      postgres = undefined;
    });

    it('answers every generated request below 500 and /healthz throughout', async (t) => {
      const operations = fuzzableOperations(doc);
      assert.ok(operations.length > 50, `only ${operations.length} operations in /openapi.json`);
      // Half the requests follow the schemas (they reach the store and build state the others meet),
      // half have hostile nodes.
      const valid = new SchemaArbitraries(doc, 0);
      const hostile = new SchemaArbitraries(doc, 0.1);
      const anyRequest = fc.oneof(
        ...operations.flatMap((op) => [requestArbitrary(valid, op), requestArbitrary(hostile, op)]),
      );
      const seen = new Set<string>();
      const statuses = new Map<string, number>();
      let sent = 0;
      const property = fc.asyncProperty(anyRequest, async (request) => {
        seen.add(`${request.method} ${request.route}`);
        const answer = await send(server.url, request);
        const statusClass = `${String(answer.status)[0]}xx`;
        statuses.set(statusClass, (statuses.get(statusClass) ?? 0) + 1);
        assert.ok(answer.status < 500, `${answer.status} ${answer.text}\n  for ${describeRequest(request)}`);
        if (++sent % 50 === 0) {
          const health = await send(server.url, { method: 'GET', route: '/healthz', url: '/healthz' });
          assert.equal(health.status, 200, `/healthz after ${describeRequest(request)}: ${health.text}`);
        }
      });
      const result = await fc.check(property, { seed, numRuns: runs, endOnFailure: true });
      if (result.failed) {
        assert.fail(
          `API fuzz failed on ${backend.name}: replay with BERTH_FUZZ_SEED=${seed} (path ${result.counterexamplePath})\n` +
            `${result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)}`,
        );
      }
      const health = await send(server.url, { method: 'GET', route: '/healthz', url: '/healthz' });
      assert.equal(health.status, 200);
      t.diagnostic(
        `${sent} requests over ${seen.size} of ${operations.length} operations: ${[...statuses]
          .sort()
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
      );
      // Most operations were hit: the generator did not collapse onto a few routes.
      assert.ok(
        seen.size > operations.length / 2,
        `only ${seen.size} of ${operations.length} operations were fuzzed`,
      );
    });
  });
}
