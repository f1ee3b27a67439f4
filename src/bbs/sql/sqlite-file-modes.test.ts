import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { desiredDefinition } from '../../testing/bbs-store-contract.js';
import { openBbsStore } from '../open-bbs-store.js';

/**
 * The SQLite database holds every env value of the cluster: owner only, its -wal and -shm too,
 * checked as user nobody would try (in a directory anyone may enter, so the file modes alone
 * decide).
 */
const dir = mkdtempSync(join(tmpdir(), 'berth-sqlite-modes-'));
chmodSync(dir, 0o755);
after(() => rmSync(dir, { recursive: true, force: true }));

const files = (db: string) => [db, `${db}-wal`, `${db}-shm`];
const modeOf = (path: string) => statSync(path).mode & 0o777;

/** Whether user nobody (uid and gid 65534, no other groups) can read `path`. */
function nobodyReads(path: string): { ok: boolean; stderr: string } {
  const result = spawnSync(
    'setpriv',
    ['--reuid=65534', '--regid=65534', '--clear-groups', '--', 'cat', path],
    { encoding: 'utf8' },
  );
  return { ok: result.status === 0, stderr: result.stderr };
}

describe('SQLite file modes', () => {
  it('state.db, its -wal and -shm are 0600: user nobody cannot read a secret env value', async () => {
    const db = join(dir, 'fresh.sqlite3');
    const store = await openBbsStore(db);
    try {
      await store.desireLRP({ ...desiredDefinition('web', 0), env: { API_KEY: 'top-secret-value' } });
      for (const file of files(db)) {
        assert.ok(existsSync(file), file);
        assert.equal(modeOf(file), 0o600, file);
        const read = nobodyReads(file);
        assert.equal(read.ok, false, `${file} readable by nobody`);
        assert.match(read.stderr, /Permission denied/);
      }
    } finally {
      await store.close();
    }
  });

  it('files an older berth left 0644 are 0600 once opened again', async () => {
    const db = join(dir, 'old.sqlite3');
    const first = await openBbsStore(db);
    await first.desireLRP(desiredDefinition('old', 0));
    // Keep the -wal and -shm as a crashed server leaves them: open, not checkpointed away.
    for (const file of files(db)) if (existsSync(file)) chmodSync(file, 0o644);
    const second = await openBbsStore(db);
    try {
      for (const file of files(db)) if (existsSync(file)) assert.equal(modeOf(file), 0o600, file);
      assert.equal(modeOf(db), 0o600);
    } finally {
      await second.close();
      await first.close();
    }
  });
});
