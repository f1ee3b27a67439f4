import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { containsPath, modelRead } from '../model/index.js';
import { runBerth } from '../testing/berth-cli.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { type ServerProcess, startServerProcess } from '../testing/server-process.js';
import { playCells, playSystem } from '../testing/system-cells.js';

type RunningServer = ServerProcess;

/** A real `berth server` process (tokens off: auth has its own tests); resolves with its URL. */
function startServer(args: readonly string[]): Promise<RunningServer> {
  return startServerProcess(['server', '--listen', '127.0.0.1:0', '--auth', 'none', ...args]);
}

async function stopServer(s: RunningServer | undefined): Promise<void> {
  if (!s || s.child.exitCode !== null || s.child.signalCode !== null) return;
  const exited = new Promise((resolve) => s.child.once('exit', resolve));
  s.child.kill('SIGTERM');
  await exited;
}

const definition = (system: string, image: string, paths: readonly string[]) =>
  `system: ${system}\nservices:\n${paths.map((p) => `  ${p}:\n    image: ${image}\n`).join('')}`;

interface Action {
  id: string;
  state: string;
  owner: string;
  path: string;
  reason: string;
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  return (await res.json()) as T;
}

/** SIGKILLs a server and starts the next one on the same directory. */
async function killAndRestart(server: RunningServer, dir: string): Promise<RunningServer> {
  const killed = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGKILL');
  await killed;
  return startServer(['--dir', dir]);
}

/** Plays the system's cells until the action ends (a minute at most); returns it as it ended. */
async function playUntilEnded(store: SqlBbsStore, url: string, id: string): Promise<Action> {
  const deadline = Date.now() + 60_000;
  let action = await getJson<Action>(`${url}/v1/deploys/${id}`);
  while ((action.state === 'accepted' || action.state === 'in_progress') && Date.now() < deadline) {
    await playCells(store, 'system-rec');
    await new Promise((r) => setTimeout(r, 200));
    action = await getJson<Action>(`${url}/v1/deploys/${id}`);
  }
  return action;
}

function lockRows(store: SqlBbsStore) {
  return modelRead(store.backend, (db) => db.selectFrom('model_locks').selectAll().execute());
}

describe('berth deploy / teardown / system (real processes)', () => {
  const dirs: string[] = [];
  const servers: RunningServer[] = [];
  let pg: PostgresServer | undefined;
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), 'berth-sys-cli-'));
    dirs.push(d);
    return d;
  };
  after(async () => {
    for (const s of servers) await stopServer(s);
    await pg?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('two servers on one PostgreSQL, racing CLI deploys of overlapping paths: exactly the seed 004 semantics', {
    skip: postgresSkipReason() ?? false,
    timeout: 120_000,
  }, async (t) => {
    pg = await startPostgres();
    const [s1, s2] = await Promise.all([
      startServer(['--db', pg.url, '--dir', tmp()]),
      startServer(['--db', pg.url, '--dir', tmp()]),
    ]);
    servers.push(s1!, s2!);
    const dir = tmp();
    const all = ['/a', '/a/b', '/a/c', '/d'];
    writeFileSync(join(dir, 'v1.yaml'), definition('race', 'bb:1', all));
    writeFileSync(join(dir, 'v2.yaml'), definition('race', 'bb:2', all));
    // The first deploy lasts until its instances run: play the cells through the BBS meanwhile.
    const store = await openBbsStore(pg.url);
    const stopPlaying = playSystem(store, 'race');
    const first = await runBerth(['deploy', join(dir, 'v1.yaml'), '--wait', '--server', s1!.url]);
    stopPlaying();
    await store.close();
    assert.equal(first.code, 0, first.stderr);
    // v2 changes every image: each accepted deploy is a rolling update, and with no cell running
    // anything it stays running, holding its locks, for the rest of the test.
    const paths = ['/', '/a', '/a/b', '/a/c', '/d', '/a/b', '/a', '/d', '/a/c', '/'];
    const results = await Promise.all(
      paths.map((p, i) =>
        runBerth(['deploy', join(dir, 'v2.yaml'), '--path', p, '--server', (i % 2 === 0 ? s1 : s2)!.url]),
      ),
    );
    const accepted = results.flatMap((r, i) =>
      r.code === 0 ? [{ path: paths[i]!, id: r.stdout.trim() }] : [],
    );
    const refused = results.flatMap((r, i) => (r.code !== 0 ? [{ path: paths[i]!, ...r }] : []));
    assert.ok(accepted.length > 0, JSON.stringify(results));
    t.diagnostic(
      `accepted: ${accepted.map((a) => a.path).join(' ')}; refused: ${refused.map((r) => r.path).join(' ')}`,
    );
    // No two accepted actions overlap (seed: only IX is compatible with IX).
    for (const a of accepted)
      for (const b of accepted)
        if (a !== b) assert.ok(!containsPath(a.path, b.path), `${a.path} and ${b.path} both accepted`);
    // Every refusal failed at once (exit 4, lock_held) naming an accepted action that overlaps it.
    for (const r of refused) {
      assert.equal(r.code, 4, r.stderr);
      const holder = accepted.find((a) => r.stderr.includes(a.id));
      assert.ok(holder, `${r.path} refused naming an accepted action: ${r.stderr}`);
      assert.ok(containsPath(holder.path, r.path) || containsPath(r.path, holder.path), r.stderr);
    }
    // Maximal: whatever was refused conflicts with something accepted, and the rows say the same.
    const status = await getJson<{ actions: Action[] }>(`${s2!.url}/v1/systems/race`);
    assert.deepEqual(status.actions.map((a) => a.id).sort(), accepted.map((a) => a.id).sort());
    const down = await runBerth(['teardown', 'race', '--server', s2!.url]);
    assert.equal(down.code, 4);
    assert.match(down.stderr, /Cannot tear down in system "race": deploy d-\S+ of \/\S* holds/);
    await Promise.all([stopServer(s1), stopServer(s2)]);
  });

  it('kill -9 of the server mid-deploy and mid-teardown: each is taken over at the next start, keeps its locks, and finishes', {
    timeout: 180_000,
  }, async () => {
    const dir = tmp();
    const file = join(dir, 'v1.yaml');
    writeFileSync(file, definition('rec', 'bb:1', ['/web']));
    writeFileSync(join(dir, 'v2.yaml'), definition('rec', 'bb:2', ['/web']));
    const first = await startServer(['--dir', dir]);
    servers.push(first);
    const env = { BERTH_SERVER: first.url };
    const store = await openBbsStore(join(dir, 'bbs.sqlite3'));
    try {
      const stopPlaying = playSystem(store, 'rec');
      const deployed = await runBerth(['deploy', file, '--wait'], env);
      stopPlaying();
      assert.equal(deployed.code, 0, deployed.stderr);
      // Without a TTY, --wait shows plain progress lines.
      assert.match(deployed.stdout, /services \d\/1 ready, instances \d\/1 running|deploy d-\S+ succeeded/);
      const rolling = await runBerth(['deploy', join(dir, 'v2.yaml')], env);
      assert.equal(rolling.code, 0, rolling.stderr);
      const id = rolling.stdout.trim();
      const before = await getJson<Action>(`${first.url}/v1/deploys/${id}`);
      assert.ok(['accepted', 'in_progress'].includes(before.state), before.state);
      const second = await killAndRestart(first, dir);
      servers.push(second);
      const recovered = await getJson<Action>(`${second.url}/v1/deploys/${id}`);
      assert.equal(recovered.state, 'in_progress');
      assert.notEqual(recovered.owner, before.owner, 'taken over at start (its owner is dead)');
      const conflict = await runBerth(['deploy', file, '--path', '/web', '--server', second.url]);
      assert.equal(conflict.code, 4);
      assert.match(conflict.stderr, new RegExp(`deploy ${id} of / holds X on /`));
      // Play the cells (through the BBS, as reps would): the resumed rolling update completes.
      const action = await playUntilEnded(store, second.url, id);
      assert.equal(action.state, 'succeeded', JSON.stringify(action));
      const status = await runBerth(['system', 'status', 'rec', '--format', 'json', '--server', second.url]);
      assert.equal(status.code, 0, status.stderr);
      const json = JSON.parse(status.stdout) as { name: string; state: string; services: { path: string }[] };
      assert.deepEqual([json.name, json.state], ['rec', 'stable']);
      assert.deepEqual(
        json.services.map((s) => s.path),
        ['/web'],
      );

      // A teardown lasts until the instances are gone: with no cell stopping them, it waits. The
      // instance's cell announces itself, so the converger leaves its instance to it.
      await store.heartbeatCell({
        presence: {
          cell_id: 'cell-0',
          zone: 'z1',
          capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
          rep_url: 'http://127.0.0.1:1',
          placement_tags: [],
        },
        ttl_ms: 120_000,
      });
      const down = await runBerth(['teardown', 'rec', '--server', second.url]);
      assert.equal(down.code, 0, down.stderr);
      const downId = down.stdout.trim();
      assert.equal((await getJson<Action>(`${second.url}/v1/deploys/${downId}`)).state !== 'succeeded', true);
      const third = await killAndRestart(second, dir);
      servers.push(third);
      const resumed = await getJson<Action & { progress?: { kind: string } }>(
        `${third.url}/v1/deploys/${downId}`,
      );
      assert.equal(resumed.state, 'in_progress', JSON.stringify(resumed));
      assert.equal(resumed.progress?.kind, 'teardown');
      const refused = await runBerth(['deploy', file, '--server', third.url]);
      assert.equal(refused.code, 4);
      assert.match(refused.stderr, new RegExp(`teardown ${downId} of / holds X on /`));
      const ended = await playUntilEnded(store, third.url, downId);
      assert.equal(ended.state, 'succeeded', JSON.stringify(ended));
      const gone = await runBerth(['system', 'status', 'rec', '--server', third.url]);
      assert.equal(gone.code, 3, gone.stderr);
      const list = await runBerth(['system', 'list', '--server', third.url]);
      assert.equal(list.code, 0);
      assert.doesNotMatch(list.stdout, /\brec\b/);
      assert.deepEqual(await store.listDesiredLRPs({ domain: 'system-rec' }), []);
      assert.deepEqual(await lockRows(store), [], 'no lock is leaked');
    } finally {
      await store.removeCell({ cell_id: 'cell-0' }).catch(() => {});
      await store.close();
    }
  });

  it('kill -9 mid-deploy: the resumed deploy fails at its timeout counted from its acceptance, naming the service; the system shows failed', {
    timeout: 120_000,
  }, async () => {
    const dir = tmp();
    const file = join(dir, 'never.yaml');
    writeFileSync(file, definition('late', 'bb:1', ['/web']));
    const first = await startServer(['--dir', dir]);
    servers.push(first);
    const accepted = await runBerth(['deploy', file, '--timeout', '12s', '--server', first.url]);
    assert.equal(accepted.code, 0, accepted.stderr);
    const id = accepted.stdout.trim();
    const acceptedAt = Date.parse(
      (await getJson<Action & { created_at: string }>(`${first.url}/v1/deploys/${id}`)).created_at,
    );
    const second = await killAndRestart(first, dir);
    servers.push(second);
    const store = await openBbsStore(join(dir, 'bbs.sqlite3'));
    try {
      let action = await getJson<Action & { finished_at: string | null }>(`${second.url}/v1/deploys/${id}`);
      while (action.state === 'in_progress' || action.state === 'accepted') {
        await new Promise((r) => setTimeout(r, 200));
        action = await getJson(`${second.url}/v1/deploys/${id}`);
      }
      assert.equal(action.state, 'failed');
      // No cell runs anything: the reason names the service and what it waits for.
      assert.match(
        action.reason,
        /not rolled out within 12s: \/web: (0\/1 instances running|instance 0 cannot be placed: .+)$/,
      );
      // From its acceptance, not from the restart: it ended within its 12 s plus a few polls.
      const lasted = Date.parse(action.finished_at!) - acceptedAt;
      assert.ok(lasted >= 12_000 && lasted < 12_000 + 5_000, `${lasted} ms`);
      const status = await getJson<{ state: string; reason: string }>(`${second.url}/v1/systems/late`);
      assert.deepEqual([status.state, status.reason], ['failed', action.reason]);
      assert.deepEqual(await lockRows(store), [], 'no lock is leaked');
    } finally {
      await store.close();
    }
  });

  it('an invalid file exits non-zero listing every problem; nothing is accepted', async () => {
    const dir = tmp();
    const server = await startServer(['--dir', dir]);
    servers.push(server);
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      'system: shop\nservices:\n  /web:\n    image: ""\n    bogus: 1\n  /x:\n    image: y\n    relations: ["/nope"]\n',
    );
    const res = await runBerth(['deploy', file, '--server', server.url]);
    assert.equal(res.code, 2, res.stderr);
    assert.match(res.stderr, /3 problem\(s\)/);
    assert.match(res.stderr, /\/web image/);
    assert.match(res.stderr, /\/web bogus|bogus/);
    assert.match(res.stderr, /\/x relations: \/nope is not a service of this system/);
    const list = await runBerth(['system', 'list', '--server', server.url]);
    assert.equal(list.stdout.trim(), 'SYSTEM  STATE');
  });
});
