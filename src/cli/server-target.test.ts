import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runBerth } from '../testing/berth-cli.js';
import { isLoopbackHost, resolveServerTarget } from './server-target.js';

describe('resolveServerTarget: flag > env > local, and a local admin.token only for a local server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-target-'));
  writeFileSync(join(dir, 'admin.token'), 'local-admin\n');
  after(() => rmSync(dir, { recursive: true, force: true }));

  const rows: [
    what: string,
    values: Record<string, string>,
    env: NodeJS.ProcessEnv,
    url: string,
    token: string | undefined,
  ][] = [
    ['the default server is local: the admin token', { dir }, {}, 'http://127.0.0.1:8889', 'local-admin'],
    [
      '$BERTH_SERVER over the default',
      { dir },
      { BERTH_SERVER: 'http://10.1.2.3:8889/' },
      'http://10.1.2.3:8889',
      undefined,
    ],
    [
      '--server over $BERTH_SERVER',
      { dir, server: 'http://localhost:1' },
      { BERTH_SERVER: 'http://10.1.2.3:8889' },
      'http://localhost:1',
      'local-admin',
    ],
    [
      'a remote server never gets the local token',
      { dir, server: 'http://192.168.1.5:8889' },
      {},
      'http://192.168.1.5:8889',
      undefined,
    ],
    [
      '$BERTH_TOKEN goes wherever the user points it',
      { dir, server: 'http://192.168.1.5:8889' },
      { BERTH_TOKEN: 'mine' },
      'http://192.168.1.5:8889',
      'mine',
    ],
    [
      '--token over $BERTH_TOKEN',
      { dir, token: 'flag' },
      { BERTH_TOKEN: 'env' },
      'http://127.0.0.1:8889',
      'flag',
    ],
    [
      '127.0.0.0/8 is loopback',
      { dir, server: 'http://127.0.0.2:9' },
      {},
      'http://127.0.0.2:9',
      'local-admin',
    ],
    ['[::1] is loopback', { dir, server: 'http://[::1]:9' }, {}, 'http://[::1]:9', 'local-admin'],
    [
      'a name that merely starts like localhost is not',
      { dir, server: 'http://localhost.example.com' },
      {},
      'http://localhost.example.com',
      undefined,
    ],
    ['no admin.token, no token', { dir: join(dir, 'none') }, {}, 'http://127.0.0.1:8889', undefined],
  ];
  for (const [what, values, env, url, token] of rows) {
    it(what, () => {
      assert.deepEqual(resolveServerTarget(values, { env }), { url, urls: [url], token });
    });
  }

  it('`berth cell` names its server --bbs, under the same rule', () => {
    assert.deepEqual(resolveServerTarget({ dir, bbs: 'http://10.0.0.9:1' }, { urlFlag: 'bbs', env: {} }), {
      url: 'http://10.0.0.9:1',
      urls: ['http://10.0.0.9:1'],
      token: undefined,
    });
  });

  it('several servers: --bbs A,B,C and $BERTH_SERVER=A,B, in order; the local token only if all are local', () => {
    assert.deepEqual(
      resolveServerTarget(
        { dir, bbs: 'http://10.0.0.9:1, http://10.0.0.10:1/,http://10.0.0.11:1' },
        { urlFlag: 'bbs', env: {} },
      ),
      {
        url: 'http://10.0.0.9:1',
        urls: ['http://10.0.0.9:1', 'http://10.0.0.10:1', 'http://10.0.0.11:1'],
        token: undefined,
      },
    );
    assert.deepEqual(
      resolveServerTarget({ dir }, { env: { BERTH_SERVER: 'http://127.0.0.1:1,http://localhost:2' } }),
      { url: 'http://127.0.0.1:1', urls: ['http://127.0.0.1:1', 'http://localhost:2'], token: 'local-admin' },
    );
    assert.equal(
      resolveServerTarget({ dir, server: 'http://127.0.0.1:1,http://10.0.0.9:1' }, { env: {} }).token,
      undefined,
      'one remote server in the list: the local token is not sent',
    );
  });

  it('refuses a malformed list, naming the bad entry', () => {
    for (const [given, entry] of [
      ['http://10.0.0.9:1,10.0.0.10:1', '10.0.0.10:1'],
      ['http://10.0.0.9:1,,http://10.0.0.10:1', ''],
      ['http://10.0.0.9:1,ftp://x', 'ftp://x'],
    ] as const) {
      assert.throws(
        () => resolveServerTarget({ bbs: given }, { urlFlag: 'bbs', env: {} }),
        (err: unknown) => {
          const e = err as { code: string; message: string; details: { entry: string } };
          assert.equal(e.code, 'invalid_argument');
          assert.ok(e.message.includes(`Invalid --bbs "${given}" (its entry "${entry}")`), e.message);
          assert.equal(e.details.entry, entry);
          return true;
        },
      );
    }
  });

  it('refuses a server that is not an http(s) URL, naming the flag', () => {
    assert.throws(() => resolveServerTarget({ server: 'ftp://x' }, { env: {} }), {
      code: 'invalid_argument',
      message: /Invalid --server "ftp:\/\/x"/,
    });
  });

  it('isLoopbackHost', () => {
    for (const host of ['localhost', '127.0.0.1', '127.9.9.9', '[::1]', '::1'])
      assert.ok(isLoopbackHost(host), host);
    for (const host of ['10.0.0.1', '::2', 'example.com', '128.0.0.1'])
      assert.ok(!isLoopbackHost(host), host);
  });
});

/** This machine's first address that is not loopback (the eth or berth0 bridge address). */
function nonLoopbackAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return undefined;
}

describe('real commands send the local admin.token only to a server on this machine', () => {
  const address = nonLoopbackAddress();
  const dir = mkdtempSync(join(tmpdir(), 'berth-target-cli-'));
  writeFileSync(join(dir, 'admin.token'), 'local-admin\n');
  const seen: (string | undefined)[] = [];
  let server: Server;
  let port = 0;
  before(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers.authorization);
      req.resume();
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end('{"code":"unauthenticated","message":"test server: no"}');
    });
    // Every address: reached as 127.0.0.1 (loopback) and as this machine's own address (not).
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const commands: readonly (readonly string[])[] = [
    ['ps'],
    ['history', 'c1'],
    ['lrp', 'list'],
    ['system', 'status', 'shop'],
    ['cell', 'drain', 'c1'],
    ['image', 'pull', 'apps/web:1'],
  ];
  for (const command of commands) {
    it(`berth ${command.join(' ')}`, {
      skip: address === undefined && 'no non-loopback address',
    }, async () => {
      const env = { BERTH_TOKEN: '', BERTH_SERVER: '' };
      seen.length = 0;
      const remote = await runBerth([...command, '--dir', dir, '--server', `http://${address}:${port}`], env);
      assert.equal(remote.code, 5, remote.stderr);
      assert.ok(seen.length > 0, 'the request arrived');
      assert.deepEqual([...new Set(seen)], [undefined], 'no Authorization to a remote server');

      seen.length = 0;
      const explicit = await runBerth(
        [...command, '--dir', dir, '--server', `http://${address}:${port}`, '--token', 'given'],
        env,
      );
      assert.equal(explicit.code, 5, explicit.stderr);
      assert.deepEqual([...new Set(seen)], ['Bearer given'], 'a token the user passes is sent');

      seen.length = 0;
      const local = await runBerth([...command, '--dir', dir, '--server', `http://127.0.0.1:${port}`], env);
      assert.equal(local.code, 5, local.stderr);
      assert.deepEqual([...new Set(seen)], ['Bearer local-admin'], 'the local server gets the local token');
    });
  }
});
