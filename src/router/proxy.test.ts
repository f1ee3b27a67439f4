import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocket, WebSocketServer } from 'ws';
import type { ActualLRP, DesiredLRP } from '../bbs/index.js';
import type { Balance } from './instance-picker.js';
import { createProxyServer } from './proxy.js';
import { RouteTable } from './route-table.js';
import { RouterMetrics } from './router-metrics.js';

const host = 'web.test.berth.localhost';
const iso = new Date(0).toISOString();

/** Bytes the backends' `/flood` route wrote, in all; it stops at `floodLimit`. */
const flooded = { bytes: 0 };
const floodLimit = 256 * 1024 * 1024;

/**
 * Resolves with `read()` once it has not changed for `quietMs` (polled): how far a stream got
 * before back-pressure stopped it. A proxy that buffered would not stop before the end.
 */
async function settled(read: () => number, quietMs = 500): Promise<number> {
  let last = read();
  let quietSince = Date.now();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const now = read();
    if (now !== last) {
      last = now;
      quietSince = Date.now();
    } else if (Date.now() - quietSince >= quietMs) return now;
  }
}

/** A backend that answers who it is and what it was sent (headers, body size, SHA-256). */
function backend(name: string): Promise<{ server: Server; port: number; connections: () => number }> {
  let connections = 0;
  const server = createServer((req, res) => {
    if (req.url === '/flood') {
      // Writes until its socket pushes back, then again on each drain: what it got to write is
      // what the path to the client holds while the client does not read.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024);
      const pump = () => {
        while (floodLimit - flooded.bytes >= chunk.length) {
          flooded.bytes += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
      return;
    }
    if (req.url === '/hold') {
      // Never reads the upload: the client's writes must stall once the path fills.
      req.pause();
      res.on('close', () => req.destroy());
      return;
    }
    if (req.url?.startsWith('/download/')) {
      // Streams N MB of zeros without holding them: the router must not buffer either.
      let left = Number(req.url.slice('/download/'.length)) * 1024 * 1024;
      const chunk = Buffer.alloc(64 * 1024);
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const pump = () => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n)))
            return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
      return;
    }
    const hash = createHash('sha256');
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      bytes += c.length;
      hash.update(c);
    });
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-backend': name });
      res.end(
        JSON.stringify({ name, headers: req.headers, bytes, sha256: hash.digest('hex'), url: req.url }),
      );
    });
  });
  server.on('connection', () => {
    connections += 1;
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (socket) => socket.on('message', (data) => socket.send(`${name}:${String(data)}`)));
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, port: (server.address() as AddressInfo).port, connections: () => connections }),
    ),
  );
}

function desired(routes: unknown): DesiredLRP {
  return {
    process_guid: 'web',
    domain: 'd',
    instances: 3,
    image: 'bb:1',
    env: {},
    memory_mb: 0,
    disk_mb: 0,
    ports: [8080],
    routes: { http: routes },
    annotation: '',
    start_timeout_s: 60,
    placement_tags: [],
    created_at: iso,
    modification_tag: { epoch: 'e', index: 0 },
  };
}

function running(index: number, port: number): ActualLRP {
  return {
    process_guid: 'web',
    index,
    domain: 'd',
    instance_guid: `ig-${index}`,
    cell_id: 'c',
    state: 'RUNNING',
    crash_count: 0,
    last_crashed_at: null,
    crash_reason: '',
    since: iso,
    placement_error: '',
    address: '127.0.0.1',
    ports: [{ container_port: 8080, host_port: port }],
    evacuating: false,
    modification_tag: { epoch: `a${index}`, index: 1 },
  };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

function send(
  port: number,
  options: {
    method?: string;
    path?: string;
    host?: string;
    headers?: Record<string, string>;
    body?: string;
  } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        port,
        host: '127.0.0.1',
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        headers: { host: options.host ?? host, ...options.headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('the router proxy (in front of local backends)', () => {
  const backends: Awaited<ReturnType<typeof backend>>[] = [];
  const table = new RouteTable();
  const metrics = new RouterMetrics();
  let proxy: Server;
  let port = 0;
  let deadPort = 0;

  const start = async (balance: Balance = 'round-robin') => {
    const { server } = createProxyServer({ lookup: (h, p) => table.lookup(h, p), metrics, balance });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return server;
  };
  const setInstances = (ports: number[]) =>
    table.reset(
      {
        desired_lrps: [desired([{ hostname: host, port: 8080 }])],
        actual_lrps: ports.map((p, i) => running(i, p)),
        cells: [
          {
            cell_id: 'c',
            zone: 'z',
            capacity: { memory_mb: 1, disk_mb: 1, containers: 1 },
            rep_url: 'http://127.0.0.1:1',
            placement_tags: [],
            expires_at: new Date(60_000).toISOString(),
          },
        ],
      },
      0,
    );

  before(async () => {
    for (const name of ['a', 'b', 'c']) backends.push(await backend(name));
    // A port nobody listens on: an instance that just died.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    deadPort = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    proxy = await start();
    port = (proxy.address() as AddressInfo).port;
  });
  after(async () => {
    proxy.closeAllConnections();
    await new Promise((resolve) => proxy.close(resolve));
    for (const b of backends) {
      b.server.closeAllConnections();
      await new Promise((resolve) => b.server.close(resolve));
    }
  });

  it('spreads requests round robin, over keep-alive connections, with the forwarding headers', async () => {
    setInstances(backends.map((b) => b.port));
    const before = backends.map((b) => b.connections());
    const seen = new Map<string, number>();
    for (let i = 0; i < 30; i++) {
      const answer = await send(port);
      assert.equal(answer.status, 200);
      const body = JSON.parse(answer.text) as { name: string; headers: Record<string, string> };
      seen.set(body.name, (seen.get(body.name) ?? 0) + 1);
      assert.equal(body.headers['x-forwarded-for'], '127.0.0.1');
      assert.equal(body.headers['x-forwarded-proto'], 'http');
      assert.equal(body.headers['x-forwarded-host'], host);
      assert.match(body.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
    }
    assert.deepEqual([...seen.entries()].sort(), [
      ['a', 10],
      ['b', 10],
      ['c', 10],
    ]);
    // Sequential requests reuse the router's connections to each backend.
    for (const [i, b] of backends.entries())
      assert.ok(b.connections() - (before[i] ?? 0) <= 1, `${b.connections()} connections`);
    const kept = JSON.parse((await send(port, { headers: { 'x-request-id': 'mine-1' } })).text);
    assert.equal(kept.headers['x-request-id'], 'mine-1');
  });

  it('unknown host: 404; a route with no running instance: 503 naming the route', async () => {
    const unknown = await send(port, { host: 'nope.test.berth.localhost' });
    assert.equal(unknown.status, 404);
    assert.match(unknown.text, /no route for host "nope\.test\.berth\.localhost"/);
    setInstances([]);
    const none = await send(port, { host: `${host}:${port}` });
    assert.equal(none.status, 503);
    assert.match(none.text, /no running instance of route "web\.test\.berth\.localhost"/);
  });

  it('a failed connect retries another instance once for idempotent requests; a POST with a body is a 502', async () => {
    setInstances([deadPort, backends[0]?.port ?? 0]);
    for (let i = 0; i < 10; i++) {
      for (const method of ['GET', 'HEAD', 'DELETE']) {
        const answer = await send(port, { method });
        assert.equal(answer.status, 200, `${method}: ${answer.text}`);
      }
    }
    const posts = await Promise.all([0, 1].map(() => send(port, { method: 'POST', body: 'x' })));
    assert.deepEqual(posts.map((a) => a.status).sort(), [200, 502]);
    assert.match(posts.find((a) => a.status === 502)?.text ?? '', /instance 0 of route .* ECONNREFUSED/);
    setInstances([deadPort]);
    assert.equal((await send(port)).status, 502, 'one instance, dead: nothing to retry on');
  });

  it('least connections sends a request to the instance with the fewest in flight', async () => {
    const slow = createServer((_req, res) => setTimeout(() => res.end('slow'), 300));
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const lc = await start('least-connections');
    const lcPort = (lc.address() as AddressInfo).port;
    setInstances([(slow.address() as AddressInfo).port, backends[1]?.port ?? 0]);
    try {
      const first = send(lcPort);
      await new Promise((resolve) => setTimeout(resolve, 50));
      // The slow instance has one in flight: the next three all go to the idle one.
      for (let i = 0; i < 3; i++) assert.equal(JSON.parse((await send(lcPort)).text).name, 'b');
      assert.equal((await first).text, 'slow');
    } finally {
      lc.closeAllConnections();
      slow.closeAllConnections();
      await new Promise((resolve) => lc.close(resolve));
      await new Promise((resolve) => slow.close(resolve));
    }
  });

  it('WebSocket echo through the router (Upgrade piped both ways)', async () => {
    setInstances([backends[2]?.port ?? 0]);
    const socket = new WebSocket(`ws://127.0.0.1:${port}/echo`, { headers: { host } });
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const replies: string[] = [];
    const got = new Promise<void>((resolve) =>
      socket.on('message', (data) => {
        replies.push(String(data));
        if (replies.length === 3) resolve();
      }),
    );
    for (const word of ['one', 'two', 'three']) socket.send(word);
    await got;
    socket.close();
    assert.deepEqual(replies, ['c:one', 'c:two', 'c:three']);
  });

  it('a 100 MB upload and a 100 MB download stream through whole', async () => {
    setInstances([backends[0]?.port ?? 0]);
    const mb = 100;
    const expected = createHash('sha256');
    const upload = await new Promise<{ bytes: number; sha256: string }>((resolve, reject) => {
      const req = request(
        { port, host: '127.0.0.1', method: 'PUT', path: '/upload', headers: { host } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString();
          });
          res.on('end', () => resolve(JSON.parse(text)));
        },
      );
      req.on('error', reject);
      const chunk = Buffer.alloc(64 * 1024, 7);
      let left = mb * 16;
      const pump = () => {
        while (left > 0) {
          left -= 1;
          expected.update(chunk);
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        req.end();
      };
      pump();
    });
    assert.equal(upload.bytes, mb * 1024 * 1024);
    assert.equal(upload.sha256, expected.digest('hex'));
    const downloaded = await new Promise<number>((resolve, reject) => {
      const req = request({ port, host: '127.0.0.1', path: `/download/${mb}`, headers: { host } }, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
        });
        res.on('end', () => resolve(bytes));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(downloaded, mb * 1024 * 1024);
  });

  // Not buffered: a side that stops reading stops the other side's writes, through the router.
  // What the path holds then is bounded by socket buffers (a few MB per hop on loopback), where
  // a buffering proxy would take everything (the 256 MB the backend offers). Counted, not RSS:
  // the garbage collector decides RSS, and a loaded machine made that check fail once.
  const pathHoldsAtMostMb = 64;

  it('a client that stops reading a download stops the backend writing it (back-pressure through)', async () => {
    setInstances([backends[0]?.port ?? 0]);
    flooded.bytes = 0;
    const req = request({ port, host: '127.0.0.1', path: '/flood', headers: { host } });
    const response = new Promise<IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', reject);
    });
    req.end();
    const res = await response;
    assert.equal(res.statusCode, 200);
    res.pause();
    try {
      const heldMb = (await settled(() => flooded.bytes)) / 1024 / 1024;
      assert.ok(
        heldMb < pathHoldsAtMostMb,
        `the backend wrote ${heldMb.toFixed(1)} MB to a client that read none`,
      );
    } finally {
      res.destroy();
      req.destroy();
    }
  });

  it('a backend that stops reading an upload stops the client writing it (back-pressure through)', async () => {
    setInstances([backends[0]?.port ?? 0]);
    const req = request({ port, host: '127.0.0.1', method: 'PUT', path: '/hold', headers: { host } });
    req.on('error', () => {}); // destroyed at the end
    const chunk = Buffer.alloc(64 * 1024, 7);
    let accepted = 0;
    const pump = () => {
      while (accepted < floodLimit) {
        accepted += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
    };
    pump();
    try {
      const heldMb = (await settled(() => accepted)) / 1024 / 1024;
      assert.ok(
        heldMb < pathHoldsAtMostMb,
        `the client could write ${heldMb.toFixed(1)} MB to a backend that read none`,
      );
    } finally {
      req.destroy();
    }
  });

  it('/metrics on a host that is no route: requests by route and status class, latency histogram', async () => {
    const answer = await send(port, { host: `127.0.0.1:${port}`, path: '/metrics' });
    assert.equal(answer.status, 200);
    assert.match(
      answer.text,
      /berth_router_requests_total\{route="web\.test\.berth\.localhost",status_class="2xx"\} \d+/,
    );
    assert.match(
      answer.text,
      /berth_router_requests_total\{route="web\.test\.berth\.localhost",status_class="5xx"\} \d+/,
    );
    assert.match(
      answer.text,
      /berth_router_request_duration_seconds_bucket\{le="0\.005",route="web\.test\.berth\.localhost"\}/,
    );
    assert.match(answer.text, /berth_router_retries_total\{route="web\.test\.berth\.localhost"\} [1-9]/);
  });
});
