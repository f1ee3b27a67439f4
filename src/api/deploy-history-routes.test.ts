import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { DesiredLRP } from '../bbs/index.js';
import type { ActionRecord, DeployRecord } from '../model/index.js';
import { postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { playSystem } from '../testing/system-cells.js';
import { adminTokenPath } from './auth/token-store.js';
import { type BbsServer, startBbsServer } from './berth-server.js';

const secretV1 = 'pw-v1-4f7c2d9e-never-shown';
const secretV2 = 'pw-v2-b81e55a0-never-shown';

/** The shop system at version `n`: /db's env and secret change between versions, /web has none. */
function definition(mode: string, password: string) {
  return {
    system: 'shop',
    services: {
      '/db': {
        image: 'bb:1',
        command: ['/bin/true'],
        env: { MODE: mode },
        secrets: { DB_PASSWORD: { value: password } },
      },
      '/web': { image: 'bb:1', command: ['/bin/true'] },
    },
  };
}

/**
 * Issue 19, item 5 over the API (the cells played on the BBS, system-cells.ts): secrets are
 * sealed before they are stored and never answered, every deploy is listed with who, digest and
 * outcome, and a rollback brings the earlier definition (its DesiredLRP version and env) back.
 */
/** Where the server keeps its database: a SQLite file in `dir`, or a PostgreSQL server started for the test. */
interface TestDatabase {
  readonly name: string;
  open(dir: string): Promise<{ readonly db: string; close(): Promise<void> }>;
  /** The database's files, for the raw-bytes check (SQLite only). */
  readonly files?: (dir: string) => string[];
}

const sqlite: TestDatabase = {
  name: 'SQLite',
  open: async (dir) => ({ db: join(dir, 'bbs.sqlite3'), close: async () => {} }),
  files: (dir) => ['bbs.sqlite3', 'bbs.sqlite3-wal'].map((f) => join(dir, f)).filter((f) => existsSync(f)),
};

const postgres: TestDatabase = {
  name: 'PostgreSQL',
  open: async () => {
    const server = await startPostgres();
    return { db: server.url, close: () => server.stop() };
  },
};

describeSecretsAndHistory(sqlite);
const pgSkip = postgresSkipReason();
describeSecretsAndHistory(postgres, pgSkip);

function describeSecretsAndHistory(database: TestDatabase, skip?: string): void {
  describe(`secrets and deploy history over the API (${database.name})`, {
    ...(skip ? { skip } : {}),
  }, () => {
    let dir: string;
    let server: BbsServer;
    let admin: string;
    let olga: string;
    let viewer: string;
    const answers: string[] = [];
    const ids: string[] = [];
    let stopCells: () => void = () => {};

    let closeDb: () => Promise<void> = async () => {};
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'berth-deploy-history-'));
      const opened = await database.open(dir);
      closeDb = () => opened.close();
      server = await startBbsServer({
        db: opened.db,
        listen: '127.0.0.1:0',
        logger: false,
        dataDir: dir,
        // A rollout that cannot finish fails in a minute, not in the default ten.
        systems: { pollMs: 20, actionTimeoutMs: 60_000 },
      });
      admin = readFileSync(adminTokenPath(dir), 'utf8').trim();
      const token = async (role: string, name: string) =>
        ((await (await call(admin, 'POST', '/v1/tokens', { role, name })).json()) as { token: string }).token;
      olga = await token('operator', 'olga');
      viewer = await token('viewer', 'vera');
      // The cells' side of the BBS: instances claimed and RUNNING, so rolling updates complete.
      stopCells = playSystem(server.store, 'shop', undefined, 20);
    });
    let closed = false;
    after(async () => {
      stopCells();
      if (!closed) await server.close();
      await closeDb();
      rmSync(dir, { recursive: true, force: true });
    });

    async function call(token: string, method: string, path: string, body?: unknown): Promise<Response> {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      // Every answer is kept: none may hold a secret.
      answers.push(`${method} ${path} ${res.status}: ${await res.clone().text()}`);
      return res;
    }

    async function finished(token: string, action: ActionRecord): Promise<ActionRecord> {
      for (;;) {
        const now = (await (await call(token, 'GET', `/v1/deploys/${action.id}`)).json()) as ActionRecord;
        // The ends of an action, whatever the states before them are called.
        if (now.state === 'succeeded' || now.state === 'failed') return now;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }

    async function deploy(token: string, def: unknown): Promise<ActionRecord> {
      const res = await call(token, 'POST', '/v1/deploys', { definition: def });
      assert.equal(res.status, 202, answers.at(-1));
      const done = await finished(token, (await res.json()) as ActionRecord);
      assert.equal(done.state, 'succeeded', done.reason);
      ids.push(done.id);
      return done;
    }

    async function dbLRP(): Promise<DesiredLRP> {
      const res = await call(admin, 'GET', '/v1/desired_lrps?domain=system-shop');
      const { desired_lrps } = (await res.json()) as { desired_lrps: DesiredLRP[] };
      const db = desired_lrps.filter((d) => d.process_guid.startsWith('shop.db.'));
      assert.equal(db.length, 1, JSON.stringify(db.map((d) => d.process_guid)));
      return db[0]!;
    }

    it('deploy v1, deploy v2 (env and secret changed), rollback: v1 runs again', async () => {
      await deploy(olga, definition('one', secretV1));
      const v1 = await dbLRP();
      assert.deepEqual(
        v1.env,
        { MODE: 'one' },
        'the BBS never holds a secret: it reaches the container at start',
      );
      const key = join(dir, 'secrets.key');
      assert.equal(statSync(key).mode & 0o777, 0o600, 'the key file is made 0600 on first use');

      await deploy(olga, definition('two', secretV2));
      const v2 = await dbLRP();
      assert.notEqual(v2.process_guid, v1.process_guid, 'env and secret are not in the in-place set');
      assert.deepEqual(v2.env, { MODE: 'two' });

      const res = await call(admin, 'POST', '/v1/systems/shop/rollback', {});
      assert.equal(res.status, 202, answers.at(-1));
      const rolled = await finished(admin, (await res.json()) as ActionRecord);
      assert.equal(rolled.state, 'succeeded', rolled.reason);
      ids.push(rolled.id);
      const back = await dbLRP();
      assert.equal(back.process_guid, v1.process_guid, "v1's DesiredLRP version is back");
      assert.deepEqual(back.env, { MODE: 'one' });
    });

    it('berth deploys lists the three with who, digest and outcome; a rollback names what it redeploys', async () => {
      const res = await call(viewer, 'GET', '/v1/systems/shop/deploys');
      assert.equal(res.status, 200);
      const { deploys } = (await res.json()) as { deploys: DeployRecord[] };
      assert.deepEqual(
        deploys.map((d) => [d.id, d.kind, d.user, d.state, d.rollback_of]),
        [
          [ids[0], 'deploy', 'olga', 'succeeded', null],
          [ids[1], 'deploy', 'olga', 'succeeded', null],
          [ids[2], 'deploy', 'admin', 'succeeded', ids[0]],
        ],
      );
      const [d1, d2, d3] = deploys;
      assert.match(d1?.digest ?? '', /^[0-9a-f]{64}$/);
      assert.notEqual(d1?.digest, d2?.digest);
      assert.equal(d3?.digest, d1?.digest, 'the rollback deployed exactly what v1 did');
      assert.deepEqual(d1?.secrets, { '/db': ['DB_PASSWORD'] }, 'secrets by name only');
      // A rollback with nothing earlier of another definition, and one of a deploy that does not exist.
      assert.equal(
        (await call(admin, 'POST', '/v1/systems/shop/rollback', { deploy: 'd-none' })).status,
        404,
      );
      assert.equal((await call(admin, 'POST', '/v1/systems/nope/rollback', {})).status, 404);
      assert.equal((await call(viewer, 'POST', '/v1/systems/shop/rollback', {})).status, 403);
    });

    it('refuses a secret by file or sealed by a client, and quotes no value in its refusal', async () => {
      const byFile = await call(olga, 'POST', '/v1/deploys', {
        definition: {
          system: 'other',
          services: { '/a': { image: 'b', secrets: { A: { file: '/etc/shadow' } } } },
        },
      });
      assert.equal(byFile.status, 400);
      assert.match(await byFile.text(), /does not read files/);
      const bad = await call(olga, 'POST', '/v1/deploys', {
        definition: {
          system: 'other',
          services: { '/a': { image: 'b', secrets: { A: { value: secretV1, extra: 1 } } } },
        },
      });
      assert.equal(bad.status, 400);
    });

    it('no answer of any route shows a secret value, to any role', async () => {
      for (const token of [admin, olga, viewer]) {
        for (const path of [
          '/v1/systems',
          '/v1/systems/shop',
          '/v1/systems/shop/deploys',
          '/v1/desired_lrps',
          '/v1/desired_lrps?domain=system-shop',
          '/v1/actual_lrps',
          '/v1/relations?cell_id=c1',
          ...ids.map((id) => `/v1/deploys/${id}`),
        ])
          await call(token, 'GET', path);
        await call(token, 'POST', '/v1/internal/read_events', { limit: 1000 });
      }
      for (const answer of answers) {
        assert.ok(
          !answer.includes(secretV1) && !answer.includes(secretV2),
          `shows a secret: ${answer.slice(0, 400)}`,
        );
      }
    });

    it('the one route that carries a secret: an instance starting, for its cell (viewers see <redacted>)', async () => {
      const db = await dbLRP();
      answers.pop();
      const path = `/v1/relations/${db.process_guid}/0`;
      const read = async (token: string) =>
        (
          (await (
            await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } })
          ).json()) as {
            env: Record<string, string>;
          }
        ).env;
      assert.equal((await read(olga)).DB_PASSWORD, secretV1, 'the rolled-back v1 starts with v1’s secret');
      assert.equal((await read(viewer)).DB_PASSWORD, '<redacted>');
    });

    it('the database file holds no secret value in clear', { skip: !database.files }, async () => {
      stopCells();
      await server.close();
      closed = true;
      const files = database.files?.(dir) ?? [];
      const bytes = Buffer.concat(files.map((f) => readFileSync(f)));
      for (const secret of [secretV1, secretV2])
        assert.equal(bytes.indexOf(Buffer.from(secret)), -1, `${secret.slice(0, 5)}… is stored in clear`);
      // The search itself works: what is stored in clear is found (the name, the other env).
      assert.ok(bytes.indexOf(Buffer.from('DB_PASSWORD')) !== -1, 'the secret name is stored');
    });
  });
}
