import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { describe, it } from 'node:test';
import { checkMonitor } from './monitor-check.js';

async function listening<
  T extends { listen(port: number, host: string, cb: () => void): unknown; address(): unknown },
>(server: T): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

describe('checkMonitor', () => {
  it('tcp: passes while something accepts, fails once the port is closed', async () => {
    const server = createServer((socket) => socket.end());
    const port = await listening(server);
    assert.equal(await checkMonitor({ tcp: port }, '127.0.0.1', undefined), true);
    await new Promise((resolve) => server.close(resolve));
    assert.equal(await checkMonitor({ tcp: port }, '127.0.0.1', undefined), false);
  });

  it('http: 2xx and 3xx pass, 4xx and 5xx fail', async () => {
    const server = createHttpServer((req, res) => {
      res.statusCode = Number(req.url?.slice(1));
      res.end();
    });
    const port = await listening(server);
    try {
      const verdicts: Record<string, boolean> = {};
      for (const status of [200, 302, 404, 503])
        verdicts[status] = await checkMonitor({ http: { port, path: `/${status}` } }, '127.0.0.1', undefined);
      assert.deepEqual(verdicts, { 200: true, 302: true, 404: false, 503: false });
    } finally {
      server.close();
    }
  });

  it('a command check before the pod exists fails instead of running anywhere else', async () => {
    assert.equal(await checkMonitor({ command: ['true'] }, '127.0.0.1', undefined), false);
  });
});
