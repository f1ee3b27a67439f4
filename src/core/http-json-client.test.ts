import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { BerthError, type ErrorCode, httpStatusByCode, isBerthError } from './berth-error.js';
import { HttpJsonClient, type HttpJsonClientOptions, type HttpTransport } from './http-json-client.js';

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  body: string;
}

/** A real server whose answer each test sets: the client is checked against node:http, not a fake. */
let server: Server;
let baseUrl = '';
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
const seen: Seen[] = [];

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        authorization: req.headers.authorization,
        body,
      });
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function reply(status: number, body: string, type = 'application/json'): void {
  answer = (_req, res) => {
    res.writeHead(status, { 'content-type': type });
    res.end(body);
  };
}

async function failure(client: HttpJsonClient, path = '/x'): Promise<BerthError> {
  try {
    await client.request('GET', path);
  } catch (err) {
    assert.ok(isBerthError(err), `expected a BerthError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the request to fail');
}

for (const transport of ['undici', 'node:http'] as const satisfies readonly HttpTransport[]) {
  describe(`HttpJsonClient over ${transport}`, () => {
    const make = (url: string, options: HttpJsonClientOptions = {}) =>
      new HttpJsonClient(url, { transport, ...options });
    it('sends JSON with the bearer token and the query, and decodes the answer', async () => {
      reply(200, '{"ok":true}');
      const client = make(`${baseUrl}/`, { token: 't0k' });
      const body = await client.request<{ ok: boolean }>('POST', '/v1/things', {
        query: { limit: 5, cursor: undefined, domain: 'a b' },
        body: { name: 'n' },
      });
      assert.deepEqual(body, { ok: true });
      const last = seen.at(-1);
      assert.equal(last?.method, 'POST');
      assert.equal(last?.url, '/v1/things?limit=5&domain=a+b');
      assert.equal(last?.authorization, 'Bearer t0k');
      assert.equal(last?.body, '{"name":"n"}');
    });

    it('sends no Authorization without a token, and 204 is undefined', async () => {
      answer = (_req, res) => {
        res.writeHead(204);
        res.end();
      };
      assert.equal(await make(baseUrl).request('DELETE', '/v1/things/a'), undefined);
      assert.equal(seen.at(-1)?.authorization, undefined);
    });

    describe('maps every error body back to its code', () => {
      for (const [code, status] of Object.entries(httpStatusByCode) as [ErrorCode, number][]) {
        it(`${status} {code: ${code}} → ${code}, message and details kept`, async () => {
          reply(status, JSON.stringify({ code, message: `it is ${code}`, details: { id: 'x' } }));
          const err = await failure(make(baseUrl));
          assert.equal(err.code, code);
          assert.equal(err.message, `it is ${code}`);
          assert.deepEqual(err.details, { id: 'x' });
        });
      }
    });

    describe('a body that is not a berth error: the status decides, never a blanket internal', () => {
      const rows: [status: number, body: string, code: ErrorCode][] = [
        [
          400,
          '{"statusCode":400,"code":"FST_ERR_VALIDATION","message":"body/x must be string"}',
          'invalid_argument',
        ],
        [401, 'no', 'unauthenticated'],
        [403, '<html>forbidden</html>', 'forbidden'],
        [404, 'Not Found', 'not_found'],
        [409, '', 'conflict'],
        [412, '', 'precondition_failed'],
        [418, 'teapot', 'invalid_argument'],
        [429, 'slow down', 'unavailable'],
        [500, 'oops', 'internal'],
        [502, '<html>Bad Gateway</html>', 'unavailable'],
        [503, '', 'unavailable'],
        [504, 'gateway timeout', 'unavailable'],
        [507, '', 'resource_exhausted'],
      ];
      for (const [status, body, code] of rows) {
        it(`${status} ${JSON.stringify(body).slice(0, 30)} → ${code}`, async () => {
          reply(status, body, 'text/html');
          const err = await failure(make(baseUrl));
          assert.equal(err.code, code);
          assert.ok(err.message.length > 0);
        });
      }
    });

    it('a 200 that is not JSON is unavailable, naming the peer', async () => {
      reply(200, '<html>a captive portal</html>', 'text/html');
      const err = await failure(make(baseUrl, { peer: 'the rep' }));
      assert.equal(err.code, 'unavailable');
      assert.match(err.message, /Cannot read the answer of the rep/);
    });

    it('a refused connection is unavailable, with the cause and the hint', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise((resolve) => closed.close(resolve));
      const err = await failure(make(`http://127.0.0.1:${port}`, { unreachableHint: '(is it up?)' }));
      assert.equal(err.code, 'unavailable');
      assert.match(err.message, /Cannot reach the berth server at .*ECONNREFUSED.*\(is it up\?\)/);
      assert.ok(err.retryable);
    });

    it('a peer that never answers times out as unavailable', async () => {
      answer = () => {
        // never answers
      };
      const err = await failure(make(baseUrl, { timeoutMs: 100 }));
      assert.equal(err.code, 'unavailable');
      assert.match(err.message, /timed out/);
    });

    // Without the caller's signal reaching the request, these would wait out the 10-minute
    // timeout: the test's own timeout fails them instead.
    it("the caller's signal ends a request the peer never answers", { timeout: 20_000 }, async () => {
      answer = () => {
        // never answers
      };
      const client = make(baseUrl, { timeoutMs: 600_000 });
      const controller = new AbortController();
      const pending = client.request('GET', '/x', { signal: controller.signal });
      setTimeout(() => controller.abort(), 50);
      await assert.rejects(pending, (err: unknown) => isBerthError(err) && err.code === 'unavailable');
      await assert.rejects(
        client.request('GET', '/x', { signal: AbortSignal.abort() }),
        (err: unknown) => isBerthError(err) && err.code === 'unavailable',
      );
    });

    it("a client's own policy applies over the one mapping", async () => {
      reply(500, '{"code":"internal","message":"boom"}');
      const client = make(baseUrl, {
        mapError: (err, status) =>
          new BerthError(status >= 500 ? 'unavailable' : err.code, `rep: ${err.message}`),
      });
      const err = await failure(client);
      assert.equal(err.code, 'unavailable');
      assert.equal(err.message, 'rep: boom');
    });

    it('openStream returns the streaming response, or the mapped error', async () => {
      answer = (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end('data: 1\n\n');
      };
      const response = await make(baseUrl, { token: 's' }).openStream('/v1/events');
      assert.equal(await response.text(), 'data: 1\n\n');
      assert.equal(seen.at(-1)?.authorization, 'Bearer s');
      reply(403, '{"code":"forbidden","message":"viewer"}');
      await assert.rejects(make(baseUrl).openStream('/v1/events'), { code: 'forbidden' });
    });

    it('followStream resumes after the last id when the stream drops, and stops on abort', async () => {
      const lastIds: Array<string | undefined> = [];
      answer = (req, res) => {
        const last = req.headers['last-event-id'] as string | undefined;
        lastIds.push(last);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // Each connection sends the two events after the one asked for, then drops.
        const from = Number(last ?? 0);
        res.end(
          `: ping\n\nid: ${from + 1}\nevent: e\ndata: ${from + 1}\n\nid: ${from + 2}\ndata: ${from + 2}\n\n`,
        );
      };
      const controller = new AbortController();
      const data: string[] = [];
      for await (const block of make(baseUrl).followStream('/v1/events', {
        signal: controller.signal,
        reconnectMs: 1,
      })) {
        if (block.data) data.push(block.data);
        if (data.length === 5) controller.abort();
      }
      assert.deepEqual(data, ['1', '2', '3', '4', '5']);
      assert.deepEqual(lastIds, [undefined, '2', '4']);
    });

    it('followStream throws an answer that is an error instead of retrying it', async () => {
      reply(401, '{"code":"unauthenticated","message":"no token"}');
      const stream = make(baseUrl).followStream('/v1/events', { reconnectMs: 1 });
      await assert.rejects(stream.next(), { code: 'unauthenticated' });
    });
  });
}
