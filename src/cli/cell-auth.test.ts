import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BbsClient } from '../bbs/index.js';
import { runBerth } from '../testing/berth-cli.js';
import { TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 17, finding 4: a real `berth server` (token auth on) and a real `berth cell`. The rep's API
 * answers only the holder of the cell's token, which the server keeps and never shows; the server's
 * auctioneer still places work there, and an operator drains the cell through the server.
 */
const cluster = new TestCluster('berth-cell-auth-');
let serverUrl = '';
let adminToken = '';
let viewerToken = '';
let repUrl = '';
let repToken = '';

before(async () => {
  // Later flags win: the harness's `--auth none` gives way to tokens.
  serverUrl = await cluster.startServer('server', '1s', ['--auth', 'tokens']);
  adminToken = readFileSync(join(cluster.root, 'server', 'admin.token'), 'utf8').trim();
  const created = await fetch(`${serverUrl}/v1/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ role: 'viewer', name: 'watcher' }),
  });
  assert.equal(created.status, 201);
  viewerToken = ((await created.json()) as { token: string }).token;
  await cluster.startCell('a1', 'z1', 63600, serverUrl, ['--token', adminToken]);
  const admin = new BbsClient(serverUrl, { token: adminToken });
  repUrl = await waitFor('cell a1 registered', async () => {
    return (await admin.listCells()).find((c) => c.cell_id === 'a1')?.rep_url;
  });
  repToken = readFileSync(join(cluster.root, 'a1', 'rep.token'), 'utf8').trim();
});

after(() => cluster.cleanup());

const rep = (method: 'GET' | 'POST', path: string, token?: string, body?: unknown) =>
  fetch(`${repUrl}${path}`, {
    method,
    headers: {
      ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(10_000),
  });

describe("the rep's API on a real cell", { timeout: 300_000 }, () => {
  it('keeps its token in the data dir, readable by root only', () => {
    assert.match(repToken, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(statSync(join(cluster.root, 'a1', 'rep.token')).mode & 0o777, 0o600);
  });

  it('refuses every route but /healthz without the token, or with a wrong one, and keeps running', async () => {
    assert.equal((await rep('GET', '/healthz')).status, 200);
    const work = { lrps: [], tasks: [] };
    const stop = { process_guid: 'p', index: 0, instance_guid: 'i' };
    for (const token of [undefined, 'not-the-token', adminToken, `${repToken}x`]) {
      for (const [method, path, body] of [
        ['GET', '/v1/state', undefined],
        ['POST', '/v1/work', work],
        ['POST', '/v1/stop', stop],
        ['POST', '/v1/evacuate', undefined],
      ] as const) {
        const response = await rep(method, path, token, body);
        assert.equal(response.status, 401, `${method} ${path} with ${token ?? 'no token'}`);
        assert.equal(((await response.json()) as { code: string }).code, 'unauthenticated');
      }
    }
    const state = await rep('GET', '/v1/state', repToken);
    assert.equal(state.status, 200);
    assert.equal(((await state.json()) as { evacuating: boolean }).evacuating, false, 'not evacuating');
    assert.equal(cluster.cells.get('a1')?.exitCode, null, 'the cell still runs');
  });

  it("never shows the rep's token through the server's API, to a viewer or an admin", async () => {
    for (const token of [viewerToken, adminToken]) {
      const answers = [
        await fetch(`${serverUrl}/v1/cells`, { headers: { authorization: `Bearer ${token}` } }),
        ...(await Promise.all(
          ['list_cells', 'read_snapshot', 'read_convergence_snapshot'].map((op) =>
            fetch(`${serverUrl}/v1/internal/${op}`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: '{}',
            }),
          ),
        )),
      ];
      for (const answer of answers) {
        assert.equal(answer.status, 200, answer.url);
        const text = await answer.text();
        assert.match(text, /"a1"/, `${answer.url} lists the cell`);
        assert.ok(!text.includes(repToken), `${answer.url} shows the token`);
        assert.ok(!text.includes('rep_token'), `${answer.url} names the token`);
      }
    }
    const listed = await runBerth([
      'cells',
      '--format',
      'json',
      '--server',
      serverUrl,
      '--token',
      viewerToken,
    ]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(!listed.stdout.includes(repToken));
  });

  it("still gets work from the server's auctioneer, which holds the token", async () => {
    const bbs = new BbsClient(serverUrl, { token: adminToken });
    await bbs.desireTask({
      task_guid: 't-auth',
      domain: 'tests',
      image: 'bb:1',
      command: ['/bin/sh', '-c', 'echo -n placed > /tmp/out'],
      env: {},
      memory_mb: 16,
      disk_mb: 16,
      result_file: '/tmp/out',
      completion_callback_url: '',
      placement_tags: [],
    });
    const done = await waitFor(
      't-auth COMPLETED',
      async () => {
        const t = await bbs.getTask({ task_guid: 't-auth' });
        return t.state === 'COMPLETED' ? t : undefined;
      },
      120_000,
    );
    assert.equal(done.failed, false, done.failure_reason);
    assert.equal(done.cell_id, 'a1');
    assert.equal(done.result, 'placed');
  });

  it('is drained through the server: a viewer may not, an operator may', async () => {
    const refused = await runBerth(['cell', 'drain', 'a1', '--server', serverUrl, '--token', viewerToken]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /viewer/);
    const missing = await runBerth(['cell', 'drain', 'nope', '--server', serverUrl, '--token', adminToken]);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /Cannot find cell "nope"/);
    const cell = cluster.cells.get('a1');
    const exited = new Promise<number | null>((resolve) => cell?.once('exit', resolve));
    const drained = await runBerth(['cell', 'drain', 'a1', '--server', serverUrl, '--token', adminToken]);
    assert.equal(drained.code, 0, drained.stderr);
    assert.match(drained.stdout, /a1 evacuating/);
    assert.equal(await exited, 0, 'the drained cell exits cleanly');
  });
});
