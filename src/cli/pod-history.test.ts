import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runBerth, spawnBerth } from '../testing/berth-cli.js';
import { makeBusyboxRootfs } from '../testing/busybox-rootfs.js';
import { waitFor } from '../testing/cluster-harness.js';
import { fingerprintCapacity, readMachineTotals } from './capacity-fingerprint.js';

interface HistoryItem {
  status: string;
  entity_type: string;
  entity_id: string | null;
  exit_code: number | null;
}

/**
 * Issue 6: "every container berth ever ran" includes pods run directly, with no server anywhere.
 * Real processes: `berth run` in the foreground and detached on a data dir, then `berth up` on
 * that dir, whose cell delivers what the CLI dropped; the server's API shows each full history.
 */
describe('pods run with berth run get a container record and history', { timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-pod-history-'));
  let up: ChildProcess | undefined;
  after(() => {
    up?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('foreground and detached pods, recorded while no server ran, reach the server later', async () => {
    const imported = await runBerth([
      'image',
      'import-rootfs',
      '--dir',
      dir,
      makeBusyboxRootfs(join(dir, 'rfs')),
      '--name',
      'bb',
    ]);
    assert.equal(imported.code, 0, imported.stderr);
    const fg = await runBerth([
      'run',
      '--dir',
      dir,
      '--net',
      'none',
      '--name',
      'fg',
      'bb',
      '--',
      'sh',
      '-c',
      'echo hello-history; exit 3',
    ]);
    assert.equal(fg.code, 3, fg.stderr);
    const list = await runBerth(['list', '--dir', dir, '--format', 'json']);
    const fgUuid = (JSON.parse(list.stdout) as { uuid: string; name: string }[]).find(
      (p) => p.name === 'fg',
    )?.uuid;
    assert.ok(fgUuid);
    const bg = await runBerth(['run', '-d', '--dir', dir, '--net', 'none', 'bb', '--', 'sh', '-c', 'exit 0']);
    assert.equal(bg.code, 0, bg.stderr);
    const bgUuid = bg.stdout.trim();
    // Detached and removed the moment it ends: only its obituary can tell the history.
    const gone = await runBerth([
      'run',
      '-d',
      '--rm',
      '--dir',
      dir,
      '--net',
      'none',
      'bb',
      '--',
      'sh',
      '-c',
      'echo bye; exit 4',
    ]);
    assert.equal(gone.code, 0, gone.stderr);
    const goneUuid = gone.stdout.trim();
    await waitFor('the --rm pod removed', async () => {
      const l = await runBerth(['list', '--dir', dir, '--format', 'json']);
      return (JSON.parse(l.stdout) as { uuid: string }[]).some((p) => p.uuid === goneUuid) ? undefined : true;
    });
    // A user stops a long-running detached pod: their action, and its end is Killed by it, not Failed.
    const long = await runBerth(['run', '-d', '--dir', dir, '--net', 'none', 'bb', '--', 'sleep', '300']);
    assert.equal(long.code, 0, long.stderr);
    const longUuid = long.stdout.trim();
    const entered = await runBerth(['enter', '--dir', dir, longUuid, '--', 'true']);
    assert.equal(entered.code, 0, entered.stderr);
    const stopped = await runBerth(['stop', '--dir', dir, '--timeout', '1', longUuid]);
    assert.equal(stopped.code, 0, stopped.stderr);
    // `status --wait` answers with the pod's exit status (SIGKILL's here: sleep ignores SIGTERM as pid 1).
    assert.equal((await runBerth(['status', '--wait', '--dir', dir, longUuid])).code, 137);
    // Nobody watched the detached pod end: the next status finds it ended.
    const waited = await runBerth(['status', '--wait', '--dir', dir, bgUuid]);
    assert.equal(waited.code, 0, waited.stderr);
    assert.ok(readdirSync(join(dir, 'pod-history')).length > 0, 'the records wait on disk');

    up = spawnBerth(['up', '--dir', dir, '--listen', '127.0.0.1:0', '--no-example', '--auth', 'none']);
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      up?.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /berth is up: (http:\/\/\S+)/.exec(out);
        if (m?.[1]) resolve(m[1]);
      });
      up?.once('exit', (code) => reject(new Error(`berth up exited ${code}`)));
    });

    const history = async (uuid: string, final: string) =>
      waitFor(`history of ${uuid}`, async () => {
        const res = await fetch(`${url}/v1/containers/${uuid}`);
        if (!res.ok) return undefined;
        const record = (await res.json()) as { status: string; owner_kind: string; history: HistoryItem[] };
        return record.status === final ? record : undefined;
      });
    // The local cell advertises this machine's memory and free disk (issue 19: a fingerprint).
    const cells = (await (await fetch(`${url}/v1/cells`)).json()) as {
      cells: Array<{ cell_id: string; capacity: { memory_mb: number; disk_mb: number } }>;
    };
    const local = cells.cells.find((c) => c.cell_id === 'local');
    const expected = fingerprintCapacity(readMachineTotals(dir));
    assert.equal(local?.capacity.memory_mb, expected.memory_mb);
    // Free disk moves while other tests write: the same within 2 %.
    assert.ok(
      Math.abs((local?.capacity.disk_mb ?? 0) - expected.disk_mb) <= expected.disk_mb * 0.02,
      `disk ${local?.capacity.disk_mb} vs ${expected.disk_mb}`,
    );

    const longRecord = await history(longUuid, 'Killed');
    const stop = longRecord.history.find((h) => h.entity_type === 'user' && h.status === 'stop');
    assert.equal(stop?.entity_id, userInfo().username, JSON.stringify(longRecord.history));
    const exec = longRecord.history.find((h) => h.entity_type === 'user' && h.status === 'exec_start');
    assert.equal(exec?.entity_id, userInfo().username, JSON.stringify(longRecord.history));
    assert.ok(!longRecord.history.some((h) => h.status === 'Failed'), JSON.stringify(longRecord.history));

    const fgRecord = await history(fgUuid, 'Failed');
    assert.equal(fgRecord.owner_kind, 'direct');
    const created = fgRecord.history.find((h) => h.status === 'Created');
    assert.equal(created?.entity_type, 'user');
    assert.ok(created?.entity_id, 'the OS user who ran it');
    assert.ok(fgRecord.history.some((h) => h.status === 'Running' && h.entity_type === 'event'));
    assert.ok(fgRecord.history.some((h) => h.entity_type === 'event' && h.exit_code === 3));
    const logs = await (await fetch(`${url}/v1/containers/${fgUuid}/logs`)).text();
    assert.match(logs, /hello-history/);

    const bgRecord = await history(bgUuid, 'Complete');
    assert.ok(
      bgRecord.history.some((h) => h.entity_type === 'service' && h.exit_code === 0),
      `the end found by polling is entity service: ${JSON.stringify(bgRecord.history)}`,
    );
    const goneRecord = await history(goneUuid, 'Failed');
    assert.ok(
      goneRecord.history.some((h) => h.exit_code === 4),
      JSON.stringify(goneRecord.history),
    );
    assert.match(await (await fetch(`${url}/v1/containers/${goneUuid}/logs`)).text(), /bye/);
    await waitFor('the dropbox emptied', async () =>
      readdirSync(join(dir, 'pod-history')).length === 0 ? true : undefined,
    );
  });
});
