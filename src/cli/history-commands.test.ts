import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildApp, createHistoryServerParts, type HistoryServerParts } from '../api/index.js';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { runBerth } from '../testing/berth-cli.js';
import { launchOf } from '../testing/history-store-contract.js';
import { resolveServerTarget } from './server-target.js';

const at = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s)).toISOString();

describe('berth ps / history / subscribe / token create / events (real processes, token auth)', () => {
  let dir: string;
  let store: SqlBbsStore;
  let parts: HistoryServerParts;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let url: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-hist-cli-'));
    store = await openBbsStore(':memory:');
    // `berth subscribe` registers a webhook on 127.0.0.1 (a closed port: nothing is delivered).
    parts = await createHistoryServerParts(store, {
      auth: 'tokens',
      dataDir: dir,
      allowPrivateCallbacks: true,
    });
    app = await buildApp({ store, auth: parts.auth, plugins: [parts.plugin], eventPollMs: 50 });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    await parts.history.ingest([
      { type: 'launch', container: launchOf('cli-1', { system: 'shop' }), external_timestamp: at(1) },
      {
        type: 'event',
        container_id: 'cli-1',
        event: 'start',
        external_timestamp: at(2),
        entity_type: 'event',
      },
      {
        type: 'event',
        container_id: 'cli-1',
        event: 'die',
        external_timestamp: at(3),
        exit_code: 2,
        entity_type: 'event',
      },
    ]);
  });
  after(async () => {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const env = { BERTH_TOKEN: '' };

  it('without a token the CLI fails with the 401 message and exit code 5', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'berth-hist-cli-empty-'));
    const r = await runBerth(['ps', '--server', url, '--dir', empty], env);
    rmSync(empty, { recursive: true, force: true });
    assert.equal(r.code, 5);
    assert.match(r.stderr, /Missing bearer token/);
  });

  it('reads <dir>/admin.token for a local server; BERTH_TOKEN wins over it', () => {
    const local = { server: url, dir };
    assert.equal(resolveServerTarget(local, { env: {} }).token, parts.adminToken);
    assert.equal(resolveServerTarget(local, { env: { BERTH_TOKEN: 'x' } }).token, 'x');
    assert.equal(resolveServerTarget({ server: url, dir: join(dir, 'none') }, { env: {} }).token, undefined);
  });

  it('berth ps lists containers across the cluster', async () => {
    const r = await runBerth(['ps', '--server', url, '--dir', dir], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^CONTAINER\s+IMAGE\s+STATUS/);
    assert.match(r.stdout, /cli-1\s+busybox\s+die/);
  });

  it('berth history shows every change and who caused it', async () => {
    const r = await runBerth(['history', '--server', url, '--dir', dir, 'cli-1'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /status die since/);
    assert.match(r.stdout, /Created\s+system\s+Launched on cell cell-1/);
    assert.match(r.stdout, /die\s+2\s+event/);
    const missing = await runBerth(['history', '--server', url, '--dir', dir, 'nope'], env);
    assert.equal(missing.code, 3);
  });

  it('berth token create makes a viewer token that cannot subscribe (403)', async () => {
    const created = await runBerth(
      ['token', 'create', '--role', 'viewer', '--name', 'vic', '--server', url, '--dir', dir],
      env,
    );
    assert.equal(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    const denied = await runBerth(
      ['subscribe', '--server', url, '--status', 'Failed', 'http://127.0.0.1:9/x'],
      {
        BERTH_TOKEN: token,
      },
    );
    assert.equal(denied.code, 5);
    assert.match(denied.stderr, /role viewer is not allowed/);
    const ok = await runBerth(['ps', '--server', url], { BERTH_TOKEN: token });
    assert.equal(ok.code, 0);
  });

  it('berth subscribe registers a webhook visible with its delivery log', async () => {
    const r = await runBerth(
      ['subscribe', '--server', url, '--dir', dir, '--status', 'Failed,Complete', 'http://127.0.0.1:9/hook'],
      env,
    );
    assert.equal(r.code, 0, r.stderr);
    const sub = await parts.webhooks.get(r.stdout.trim());
    assert.deepEqual(sub.statuses, ['Failed', 'Complete']);
  });

  it('berth events prints container status changes from the bus', async () => {
    const r = await runBerth(['events', '--server', url, '--dir', dir], env);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { item: { status: string } });
    assert.deepEqual(
      lines.map((l) => l.item.status),
      ['Created', 'Running', 'die'],
    );
  });
});
