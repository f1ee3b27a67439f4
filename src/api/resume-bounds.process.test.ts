import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openBbsStore } from '../bbs/index.js';
import { limits } from '../core/index.js';
import { SqlModelTxnRunner, SqlSystemStore, type SystemDefinition } from '../model/index.js';
import { postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { type ServerProcess, startServerProcess } from '../testing/server-process.js';

/**
 * Issue 17, finding 3: a deploy accepted by an older berth with a count past today's bound was
 * resumed at every start and hung the server again. Written here straight into the store as that
 * berth would have, it must neither block nor hang a real `berth server` process: the server
 * answers at once and the action ends failed, the problem as its reason.
 */
function oversizedDeploy(system: string): SystemDefinition {
  return {
    system,
    services: [
      {
        path: '/web',
        image: 'busybox',
        env: {},
        // What `"instances": 9007199254740993` parses to.
        instances: 2 ** 53,
        ports: [],
        memory_mb: 128,
        disk_mb: 1024,
        routes: {},
        annotation: '',
        relations: [],
      },
    ],
    jobs: [],
  };
}

async function writeOldAction(db: string, id: string): Promise<void> {
  const store = await openBbsStore(db);
  try {
    await SqlModelTxnRunner.open(store.backend);
    await new SqlSystemStore(store.backend).acceptAction({
      id,
      system: 'huge',
      action: { kind: 'deploy', path: '/' },
      definition: oversizedDeploy('huge'),
      // A server of this host that is gone (no such pid): the next server takes the action over at once.
      owner: `${hostname()}:2147483646:old`,
    });
  } finally {
    await store.close();
  }
}

/** A real `berth server` process, tokens off (auth has its own tests). */
function startServer(args: readonly string[]): Promise<ServerProcess> {
  return startServerProcess(['server', '--listen', '127.0.0.1:0', '--auth', 'none', ...args]);
}

/** GET with its own timeout: a hung server is a failure here, not a hung test. */
async function getJson(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function assertResumedActionFails(db: string, dataDir: string): Promise<void> {
  await writeOldAction(db, 'd-old-huge');
  const server = await startServer(['--dir', dataDir, '--db', db]);
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  try {
    let action: Record<string, unknown> = {};
    for (let attempt = 0; attempt < 200; attempt++) {
      assert.equal((await getJson(`${server.url}/healthz`)).status, 200);
      action = (await getJson(`${server.url}/v1/deploys/d-old-huge`)).body;
      // Live while accepted or in progress (`running` is how a pre-issue-19 row reads).
      if (!['accepted', 'in_progress', 'running'].includes(String(action.state))) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(action.state, 'failed', JSON.stringify(action));
    assert.match(String(action.reason), /\/web instances/);
    assert.match(String(action.reason), new RegExp(String(limits.maxInstances)));
    // Nothing of it was written, and its locks are gone: the next deploy of the system is accepted.
    assert.deepEqual((await getJson(`${server.url}/v1/desired_lrps`)).body, { desired_lrps: [] });
  } finally {
    server.child.kill('SIGTERM');
    // A hung server (the bug this guards against) never gets to handle SIGTERM.
    const killer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  }
}

describe('a stored deploy past the bounds, resumed at start-up', () => {
  it('fails with a reason and does not block a server on SQLite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-resume-'));
    try {
      await assertResumedActionFails(join(dir, 'bbs.sqlite3'), dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails with a reason and does not block a server on PostgreSQL', {
    skip: postgresSkipReason() ?? false,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-resume-'));
    const postgres = await startPostgres('berth_resume');
    try {
      await assertResumedActionFails(postgres.url, dir);
    } finally {
      await postgres.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
