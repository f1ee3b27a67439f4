import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, beforeEach, describe, it } from 'node:test';
import {
  HttpJsonClient,
  type HttpTransport,
  PeerUnreachableError,
  splitServerUrls,
} from './http-json-client.js';

/**
 * Several servers behind one client (issue 20, item 6): two tiny real HTTP servers, each naming
 * itself in its answers; one is stopped (its port then refuses) or answers an error. The client
 * moves to the other only when no answer comes, and stays with the one that answered.
 */
interface Tiny {
  readonly name: string;
  server: Server;
  url: string;
  hits: number;
  /** What the next requests get; default 200 `{"from": name}`. */
  answer?: (res: ServerResponse) => void;
  /** Open event streams, ended when the server stops (kill -9 of a server drops them too). */
  readonly streams: Set<ServerResponse>;
}

async function startTiny(name: string, port = 0): Promise<Tiny> {
  const tiny: Tiny = { name, server: createServer(), url: '', hits: 0, streams: new Set() };
  tiny.server.on('request', (req, res) => {
    tiny.hits += 1;
    if (req.url?.startsWith('/events')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const after = Number(req.headers['last-event-id'] ?? 0);
      // Two events per connection, numbered on from where the client says it was.
      res.write(`id: ${after + 1}\ndata: ${name}\n\nid: ${after + 2}\ndata: ${name}\n\n`);
      tiny.streams.add(res);
      return;
    }
    req.resume();
    req.on('end', () => {
      if (tiny.answer) return tiny.answer(res);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ from: name }));
    });
  });
  await new Promise<void>((resolve) => tiny.server.listen(port, '127.0.0.1', resolve));
  tiny.url = `http://127.0.0.1:${(tiny.server.address() as AddressInfo).port}`;
  return tiny;
}

async function stopTiny(tiny: Tiny): Promise<void> {
  for (const res of tiny.streams) res.destroy();
  tiny.server.closeAllConnections();
  await new Promise<void>((resolve) => tiny.server.close(() => resolve()));
}

for (const transport of ['undici', 'node:http'] as HttpTransport[]) {
  describe(`HttpJsonClient over several servers (${transport})`, () => {
    let a: Tiny;
    let b: Tiny;
    const started: Tiny[] = [];
    beforeEach(async () => {
      await Promise.all(
        started
          .splice(0)
          .filter((t) => t.server.listening)
          .map(stopTiny),
      );
      a = await startTiny('a');
      b = await startTiny('b');
      started.push(a, b);
    });
    after(() => Promise.all(started.filter((t) => t.server.listening).map(stopTiny)));

    const from = async (client: HttpJsonClient) =>
      (await client.request<{ from: string }>('GET', '/who')).from;

    it('uses the first while it answers; when it dies, the next, and stays there', async () => {
      const client = new HttpJsonClient(`${a.url},${b.url}`, { transport });
      assert.deepEqual(client.baseUrls, [a.url, b.url]);
      assert.equal(await from(client), 'a');
      assert.equal(await from(client), 'a');
      assert.equal(b.hits, 0, 'the second server is not asked while the first answers');
      await stopTiny(a);
      assert.equal(await from(client), 'b', 'a refused connection moves the request to b');
      assert.equal(client.baseUrl, b.url);
      // a comes back on its port: the client stays with b, which answers.
      a = await startTiny('a', Number(new URL(a.url).port));
      started.push(a);
      const aHits = a.hits;
      assert.equal(await from(client), 'b');
      assert.equal(a.hits, aHits);
      // b dies: back to a, wrapping around the list.
      await stopTiny(b);
      assert.equal(await from(client), 'a');
    });

    it('an answer that is an error is the server’s word: no move to the next', async () => {
      const client = new HttpJsonClient([a.url, b.url], { transport });
      a.answer = (res) => {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ code: 'unavailable', message: 'busy' }));
      };
      await assert.rejects(from(client), (err: unknown) => {
        assert.ok(!(err instanceof PeerUnreachableError), 'a 503 is an answer');
        return true;
      });
      assert.equal(b.hits, 0);
      assert.equal(client.baseUrl, a.url);
    });

    it('when no server answers: unavailable, naming every server tried', async () => {
      const client = new HttpJsonClient([a.url, b.url], { transport, peer: 'the BBS' });
      await stopTiny(a);
      await stopTiny(b);
      await assert.rejects(from(client), (err: unknown) => {
        assert.ok(err instanceof PeerUnreachableError);
        assert.equal(err.code, 'unavailable');
        assert.match(err.message, /Cannot reach the BBS/);
        assert.ok(err.message.includes(a.url) && err.message.includes(b.url), err.message);
        return true;
      });
    });

    it('a request that times out on a hung server moves to the next', async () => {
      const client = new HttpJsonClient([a.url, b.url], { transport, timeoutMs: 300 });
      a.answer = () => undefined; // never answers
      assert.equal(await from(client), 'b');
      assert.equal(client.baseUrl, b.url);
    });
  });
}

describe('followStream over several servers', () => {
  it('reconnects to the next server when its server dies, resuming after the last id', async () => {
    const a = await startTiny('a');
    const b = await startTiny('b');
    try {
      const client = new HttpJsonClient([a.url, b.url]);
      const controller = new AbortController();
      const seen: { id: string | undefined; data: string }[] = [];
      for await (const block of client.followStream('/events', {
        signal: controller.signal,
        reconnectMs: 10,
      })) {
        seen.push({ id: block.id, data: block.data });
        if (seen.length === 2) await stopTiny(a);
        if (seen.length === 4) controller.abort();
      }
      assert.deepEqual(seen, [
        { id: '1', data: 'a' },
        { id: '2', data: 'a' },
        { id: '3', data: 'b' },
        { id: '4', data: 'b' },
      ]);
    } finally {
      await Promise.all([a, b].filter((t) => t.server.listening).map(stopTiny));
    }
  });
});

describe('splitServerUrls', () => {
  it('splits on commas, trims, drops trailing slashes; an empty list is refused', () => {
    assert.deepEqual(splitServerUrls(' http://a:1/ , http://b:2'), ['http://a:1', 'http://b:2']);
    assert.deepEqual(splitServerUrls(['http://a:1']), ['http://a:1']);
    assert.throws(() => splitServerUrls(' , '), { code: 'invalid_argument' });
  });
});
