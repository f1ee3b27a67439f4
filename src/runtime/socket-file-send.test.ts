import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { nativeAddon } from './native-addon.js';
import { type SocketFileSendError, startSocketFileSend } from './socket-file-send.js';

/** The addon's sendFile against real TCP sockets: what the registry's blob bodies go out with. */
describe('startSocketFileSend', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-sendfile-'));
  const data = randomBytes(8 * 1024 * 1024 + 3);
  const path = join(scratch, 'data');
  writeFileSync(path, data);
  let server: Server;
  let port = 0;
  /** The server's end of each connection, in the order they came. */
  const accepted: Socket[] = [];
  const waiting: ((socket: Socket) => void)[] = [];

  before(async () => {
    server = createServer((socket) => {
      const next = waiting.shift();
      if (next) next(socket);
      else accepted.push(socket);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(scratch, { recursive: true, force: true });
  });

  /** A connection: the client's socket, and the fd of the server's end. */
  async function connection(): Promise<{ client: Socket; server: Socket; fd: number }> {
    const serverEnd = new Promise<Socket>((resolve) => {
      const ready = accepted.shift();
      if (ready) resolve(ready);
      else waiting.push(resolve);
    });
    const client = connect(port, '127.0.0.1');
    const socket = await serverEnd;
    const fd = (socket as unknown as { _handle: { fd: number } })._handle.fd;
    return { client, server: socket, fd };
  }

  function received(client: Socket, bytes: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let length = 0;
      client.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        length += chunk.length;
        if (length >= bytes) resolve(Buffer.concat(chunks));
      });
      client.on('error', reject);
    });
  }

  it('sends a range of the file; the fds it was given may be closed meanwhile', async () => {
    const { client, server: end, fd } = await connection();
    const file = openSync(path, 'r');
    const fds = readdirSync('/proc/self/fd').length;
    const send = startSocketFileSend(fd, file, 1000, data.length - 2000, 60_000);
    assert.ok(send, 'the addon is built and not busy');
    closeSync(file); // the send has a dup of its own
    const [bytes, sent] = await Promise.all([received(client, data.length - 2000), send.sent]);
    assert.equal(sent, data.length - 2000);
    assert.ok(bytes.equals(data.subarray(1000, data.length - 1000)));
    assert.equal(readdirSync('/proc/self/fd').length, fds - 1, 'its dups are closed, and the file');
    send.cancel(); // after the end: nothing to do, and no harm
    client.destroy();
    end.destroy();
  });

  it('says how far the file went when it ends before the length', async () => {
    const { client, server: end, fd } = await connection();
    const file = openSync(path, 'r');
    const send = startSocketFileSend(fd, file, data.length - 10, 100, 60_000);
    assert.equal(await send?.sent, 10);
    closeSync(file);
    client.destroy();
    end.destroy();
  });

  it('runs at most 64 sends at once; past that the caller sends by itself; cancel ends each', async () => {
    const file = openSync(path, 'r');
    const connections = await Promise.all(Array.from({ length: 65 }, () => connection()));
    // No client reads: every send waits for room in its socket.
    const sends = connections.map(({ fd }) => startSocketFileSend(fd, file, 0, data.length, 60_000));
    assert.equal(sends.filter((s) => s !== undefined).length, 64);
    assert.equal(sends[64], undefined);
    for (const send of sends) send?.cancel();
    const ends = await Promise.all(sends.map((s) => s?.sent.catch((err: SocketFileSendError) => err)));
    for (const end of ends.slice(0, 64)) {
      assert.ok(end instanceof Error, 'cancelled before the end');
      assert.equal((end as SocketFileSendError).code, 'EPIPE');
      assert.ok((end as SocketFileSendError).sent < data.length);
    }
    // A slot is free again.
    const { client, server: end, fd } = await connection();
    const again = startSocketFileSend(fd, file, 0, 5, 60_000);
    assert.equal(await again?.sent, 5);
    closeSync(file);
    for (const c of [...connections, { client, server: end }]) {
      c.client.destroy();
      c.server.destroy();
    }
  });

  it('rejects bad arguments with a TypeError', () => {
    assert.throws(() => nativeAddon().sendFile(-1, 0, 0, 1, 1, () => {}), TypeError);
    assert.throws(() => nativeAddon().sendFile(0, 0, 0, 0, 1, () => {}), TypeError);
  });
});
