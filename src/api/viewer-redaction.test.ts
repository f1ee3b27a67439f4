import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { redactEnv } from '../core/index.js';
import { adminTokenPath } from './auth/token-store.js';
import { type BbsServer, startBbsServer } from './berth-server.js';

const secret = 'hunter2-do-not-show';

describe('viewers see env names, never values', () => {
  let dir: string;
  let server: BbsServer;
  let admin: string;
  let viewer: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-redact-'));
    server = await startBbsServer({
      db: join(dir, 'bbs.sqlite3'),
      listen: '127.0.0.1:0',
      logger: false,
      dataDir: dir,
      systems: true,
    });
    admin = readFileSync(adminTokenPath(dir), 'utf8').trim();
    viewer = (
      (await (await call(admin, 'POST', '/v1/tokens', { role: 'viewer', name: 'vera' })).json()) as {
        token: string;
      }
    ).token;
    const env = { DB_PASSWORD: secret, MODE: 'production' };
    assert.equal(
      (
        await call(admin, 'POST', '/v1/desired_lrps', {
          process_guid: 'web',
          domain: 'd',
          image: 'busybox',
          instances: 1,
          env,
        })
      ).status,
      201,
    );
    assert.equal(
      (await call(admin, 'POST', '/v1/tasks', { task_guid: 'job', domain: 'd', image: 'busybox', env }))
        .status,
      201,
    );
    const definition = {
      system: 'shop',
      services: { '/api': { image: 'bb:1', command: ['/bin/true'], env: { API_KEY: secret } } },
    };
    assert.equal((await call(admin, 'POST', '/v1/deploys', { definition })).status, 202);
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  function call(token: string, method: string, path: string, body?: unknown) {
    return fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  }
  /** The first events of the SSE stream, as text. */
  async function sse(token: string): Promise<string> {
    const controller = new AbortController();
    const res = await fetch(`${server.url}/v1/events`, {
      headers: { authorization: `Bearer ${token}` },
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('event: task_created'))
      text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    return text;
  }

  const reads: ReadonlyArray<[string, string, unknown?]> = [
    ['GET', '/v1/desired_lrps'],
    ['GET', '/v1/desired_lrps/web'],
    ['GET', '/v1/tasks'],
    ['GET', '/v1/tasks/job'],
    ['POST', '/v1/internal/list_desired_lrps', {}],
    ['POST', '/v1/internal/get_task', { task_guid: 'job' }],
    ['POST', '/v1/internal/read_events', { limit: 1000 }],
    ['GET', '/v1/systems/shop'],
  ];

  it('answers a viewer with <redacted> values under the same names, on every route that holds env', async () => {
    for (const [method, path, body] of reads) {
      const res = await call(viewer, method, path, body);
      assert.equal(res.status, 200, `${method} ${path}`);
      const text = await res.text();
      assert.ok(
        !text.includes(secret),
        `${method} ${path} shows the secret to a viewer: ${text.slice(0, 300)}`,
      );
    }
    const desired = (await (await call(viewer, 'GET', '/v1/desired_lrps/web')).json()) as { env: object };
    assert.deepEqual(desired.env, { DB_PASSWORD: '<redacted>', MODE: '<redacted>' });
    const stream = await sse(viewer);
    assert.match(stream, /"DB_PASSWORD":"<redacted>"/);
    assert.ok(!stream.includes(secret), 'the event stream shows the secret to a viewer');
  });

  it('answers operators and admins in clear', async () => {
    const desired = (await (await call(admin, 'GET', '/v1/desired_lrps/web')).json()) as { env: object };
    assert.deepEqual(desired.env, { DB_PASSWORD: secret, MODE: 'production' });
    assert.ok((await sse(admin)).includes(secret));
  });

  it('redacts env maps and NAME=value lists anywhere in a value, leaving the rest as it is', () => {
    const value = { a: [{ env: { K: 'v' } }, { env: ['X=1', 'Y'] }], env_count: 2, other: { name: 'env' } };
    assert.deepEqual(redactEnv(value), {
      a: [{ env: { K: '<redacted>' } }, { env: ['X=<redacted>', 'Y=<redacted>'] }],
      env_count: 2,
      other: { name: 'env' },
    });
    const clean = { x: [1, { y: 'z' }] };
    assert.equal(redactEnv(clean), clean, 'nothing to redact: the same object');
  });
});
