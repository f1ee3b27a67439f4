import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { RepClient, repClientForCell } from './index.js';

/** The client's error mapping against a real HTTP server that misbehaves on purpose. */
describe('RepClient', () => {
  let server: Server;
  let url: string;
  before(async () => {
    server = createServer((req, res) => {
      const reply = (status: number, body?: unknown): void => {
        res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
        res.end(body === undefined ? undefined : JSON.stringify(body));
      };
      if (req.url?.startsWith('/guarded/'))
        return req.headers.authorization === 'Bearer s3cret'
          ? reply(200, { cell_id: 'g', zone: 'z', lrps: {} })
          : reply(401, { code: 'unauthenticated', message: 'Invalid rep token' });
      if (req.url === '/slow/v1/state') return; // never answers
      if (req.url === '/sick/v1/state') return reply(500, { code: 'internal', message: 'boom' });
      if (req.url === '/v1/work') return reply(409, { code: 'conflict', message: 'evacuating' });
      if (req.url === '/v1/stop' || req.url === '/v1/evacuate')
        return reply(req.url === '/v1/stop' ? 204 : 202);
      reply(200, { cell_id: 'c', zone: 'z', lrps: {} });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('reads the state and accepts 204 and 202 answers', async () => {
    const client = new RepClient(`${url}/`);
    assert.equal((await client.state()).cell_id, 'c');
    await client.stop({ process_guid: 'p', index: 0, instance_guid: 'i' });
    await client.evacuate();
  });

  it('makes a refused connection, a timeout and a 5xx "unavailable" (retryable)', async () => {
    const refused = new RepClient('http://127.0.0.1:1');
    await assert.rejects(refused.state(), { code: 'unavailable' });
    await assert.rejects(new RepClient(`${url}/slow`, { timeoutMs: 100 }).state(), { code: 'unavailable' });
    await assert.rejects(new RepClient(`${url}/sick`).state(), (err: Error & { retryable?: boolean }) => {
      assert.equal(err.retryable, true);
      return true;
    });
  });

  it("sends the presence's rep token; a refused one is retryable (a restarted cell heartbeats its new one)", async () => {
    const presence = {
      cell_id: 'g',
      zone: 'z',
      capacity: { memory_mb: 1, disk_mb: 1, containers: 1 },
      rep_url: `${url}/guarded`,
      placement_tags: [],
      expires_at: new Date().toISOString(),
    };
    assert.equal((await repClientForCell({ ...presence, rep_token: 's3cret' }).state()).cell_id, 'g');
    for (const client of [repClientForCell(presence), repClientForCell({ ...presence, rep_token: 'old' })]) {
      await assert.rejects(client.state(), (err: Error & { code?: string; retryable?: boolean }) => {
        assert.equal(err.code, 'unavailable');
        assert.equal(err.retryable, true);
        assert.match(err.message, /refused the cell's token/);
        return true;
      });
    }
  });

  it('keeps the code of a 4xx berth error', async () => {
    await assert.rejects(new RepClient(url).perform({ lrps: [], tasks: [] }), {
      code: 'conflict',
      message: 'evacuating',
    });
  });
});
