import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { BbsClient } from './bbs-client.js';

/**
 * The BBS client's request gate against a plain HTTP server that holds the requests it is told to:
 * bulk operations wait their turn, a heartbeat does not.
 */
describe('BbsClient request gate', () => {
  const arrived: string[] = [];
  /** The client port of the connection each request came on, by path. */
  const ports = new Map<string, number[]>();
  const held: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    arrived.push(req.url ?? '');
    ports.set(req.url ?? '', [...(ports.get(req.url ?? '') ?? []), req.socket.remotePort ?? 0]);
    req.resume();
    req.on('end', () => {
      if (req.url === '/v1/internal/get_desired_lrp') held.push(res);
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  let url = '';
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const res of held) res.end('{}');
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  async function until(done: () => boolean): Promise<void> {
    for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  }

  const heartbeat = {
    presence: {
      cell_id: 'cell-1',
      zone: 'z1',
      capacity: { memory_mb: 1, disk_mb: 1, containers: 1 },
      rep_url: 'http://127.0.0.1:1',
      placement_tags: [],
    },
    ttl_ms: 1000,
  };

  it('a heartbeat goes while the gate is full; other operations wait for a slot', async () => {
    const client = new BbsClient(url, { maxInFlight: 1, timeoutMs: 5_000 });
    const slow = client.getDesiredLRP({ process_guid: 'p1' });
    await until(() => held.length === 1);
    const queued = client.listCells();
    const beat = client.heartbeatCell(heartbeat);
    await beat;
    assert.deepEqual(arrived, ['/v1/internal/get_desired_lrp', '/v1/internal/heartbeat_cell']);
    held.shift()?.end('{}');
    await slow;
    await queued;
    assert.deepEqual(arrived.at(-1), '/v1/internal/list_cells', 'the queued read went once a slot was free');
  });

  it('heartbeats keep one connection of their own, which bulk requests never take', async () => {
    ports.clear();
    const client = new BbsClient(url, { timeoutMs: 5_000 });
    for (let i = 0; i < 3; i++) {
      // Bulk requests at once open connections of the client's pool; the beat goes on its own.
      await Promise.all([
        client.heartbeatCell(heartbeat),
        ...Array.from({ length: 4 }, () => client.listCells()),
      ]);
    }
    const beats = ports.get('/v1/internal/heartbeat_cell') ?? [];
    assert.equal(beats.length, 3);
    assert.equal(new Set(beats).size, 1, `every beat on one connection (client ports ${beats.join(', ')})`);
    const bulk = new Set(ports.get('/v1/internal/list_cells'));
    assert.ok(!bulk.has(beats[0] as number), 'no bulk request went over the heartbeat connection');
  });
});
