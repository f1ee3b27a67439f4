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
import { type BbsServer, startBbsServer } from './berth-server.js';

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

/**
 * The same requests, in the same order, go to a server on each backend: neither may answer 5xx,
 * and a request one backend refuses as invalid (400) the other refuses too (finding 9: "same
 * input, same 4xx"). Other statuses may differ with timing (a background deploy, a lease).
 */
describe(`API fuzz on SQLite and PostgreSQL (seed ${seed}, ${runs} requests)`, () => {
  const servers: Array<{ name: string; server: BbsServer }> = [];
  let doc: OpenApiDocument;
  before(async () => {
    const options = { listen: '127.0.0.1:0', auth: 'none', logger: false, systems: true } as const;
    servers.push({ name: 'SQLite', server: await startBbsServer({ ...options, db: ':memory:' }) });
    if (postgresSkipReason() === undefined) {
      postgres = await startPostgres('berth_fuzz');
      servers.push({ name: 'PostgreSQL', server: await startBbsServer({ ...options, db: postgres.url }) });
    }
    doc = (await (await fetch(`${servers[0]!.server.url}/openapi.json`)).json()) as OpenApiDocument;
  });
  after(async () => {
    for (const { server } of servers) await server.close();
    await postgres?.stop();
  });

  it('answers every generated request below 500, 400 on both backends alike, and /healthz throughout', async (t) => {
    if (servers.length < 2) t.diagnostic(`PostgreSQL skipped: ${postgresSkipReason()}`);
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
      const answers: Array<{ name: string; status: number; text: string }> = [];
      for (const { name, server } of servers) {
        const answer = await send(server.url, request);
        answers.push({ name, ...answer });
        const statusClass = `${String(answer.status)[0]}xx`;
        statuses.set(statusClass, (statuses.get(statusClass) ?? 0) + 1);
        // Evacuation is forwarded to the cell's rep, and no rep runs here: a cell the fuzz
        // heartbeated names one that cannot be reached, which is the peer's 503, not a fault.
        const unreachableRep =
          answer.status === 503 &&
          request.route === '/v1/cells/{cell_id}/evacuate' &&
          answer.text.includes('Cannot reach the rep');
        assert.ok(
          answer.status < 500 || unreachableRep,
          `${name}: ${answer.status} ${answer.text}\n  for ${describeRequest(request)}`,
        );
      }
      const invalid = answers.filter((a) => a.status === 400);
      assert.ok(
        invalid.length === 0 || invalid.length === answers.length,
        `backends disagree: ${answers.map((a) => `${a.name} ${a.status} ${a.text}`).join(' | ')}\n  for ${describeRequest(request)}`,
      );
      if (++sent % 50 === 0) {
        for (const { name, server } of servers) {
          const health = await send(server.url, { method: 'GET', route: '/healthz', url: '/healthz' });
          assert.equal(
            health.status,
            200,
            `${name} /healthz after ${describeRequest(request)}: ${health.text}`,
          );
        }
      }
    });
    const result = await fc.check(property, { seed, numRuns: runs, endOnFailure: true });
    if (result.failed) {
      assert.fail(
        `API fuzz failed: replay with BERTH_FUZZ_SEED=${seed} (path ${result.counterexamplePath})\n` +
          `${result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)}`,
      );
    }
    for (const { server } of servers) {
      assert.equal(
        (await send(server.url, { method: 'GET', route: '/healthz', url: '/healthz' })).status,
        200,
      );
    }
    t.diagnostic(
      `${sent} requests over ${seen.size} of ${operations.length} operations, ${servers.length} backends: ${[
        ...statuses,
      ]
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
