import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type ActualLRP,
  BbsClient,
  cellPlacementTag,
  cellVolumeName,
  type DesiredLRPDefinition,
  type Task,
  type TaskDefinition,
  type VolumeMount,
} from '../bbs/index.js';
import type { SystemStatusJson } from '../model/index.js';
import { runBerth } from '../testing/berth-cli.js';
import { instanceText, TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 23 parts 3 and 4 on real cells: a server and two cell processes running runc pods. A named
 * volume keeps an instance's data on its cell and pins the instance there across crashes; a gone
 * cell leaves it waiting with a placement error naming the cell until an operator releases the pin;
 * a system's database keeps its rows across a rolling redeploy; a task's named volume is its cell's,
 * kept for the domain's later tasks there, without a pin; bad volumes are 400s naming the field; a `colocate: pod` sidecar is an app of its principal's pod and reaches it on 127.0.0.1.
 */
const cluster = new TestCluster('berth-volumes-');
let serverUrl = '';
let bbs: BbsClient;

/** Where a cell keeps the data of a named volume of `domain` (an instance's, or without `index` the tasks'). */
function volumeDir(cell: string, domain: string, volume: string, index?: number): string {
  return join(cluster.root, cell, 'volumes', cellVolumeName(domain, volume, index), '_data');
}

/**
 * Run 1 appends to /data/runs, waits for the test's go (a file the test writes into the volume on
 * the cell), and crashes once (remembered in the volume); every later run serves /data over HTTP.
 */
const crashOnce = [
  '/bin/busybox',
  'sh',
  '-c',
  'echo run >> /data/runs; until [ -e /data/go ]; do sleep 0.2; done; ' +
    'if [ ! -e /data/crashed ]; then touch /data/crashed; exit 3; fi; ' +
    'echo hi > /scratch/x && exec /bin/busybox httpd -f -p 8080 -h /data',
];

function lrp(processGuid: string, extra: Partial<DesiredLRPDefinition> = {}): DesiredLRPDefinition {
  return {
    process_guid: processGuid,
    domain: 'tests',
    instances: 1,
    image: 'bb:1',
    command: crashOnce,
    env: {},
    memory_mb: 16,
    disk_mb: 16,
    ports: [8080],
    routes: {},
    annotation: '',
    start_timeout_s: 60,
    placement_tags: [],
    volumes: [
      { name: 'data', kind: 'named', target: '/data' },
      { name: 'scratch', kind: 'empty', target: '/scratch', tmpfs_mb: 4 },
    ],
    ...extra,
  };
}

async function instance(guid: string): Promise<ActualLRP | undefined> {
  return (await bbs.listActualLRPs({ process_guid: guid })).find((a) => !a.evacuating);
}

before(async () => {
  serverUrl = await cluster.startServer('server', '1s');
  bbs = new BbsClient(serverUrl);
  await bbs.upsertDomain({ domain: 'tests', ttl_ms: 0 });
  await Promise.all([
    cluster.startCell('c1', 'z1', 64600, serverUrl),
    cluster.startCell('c2', 'z1', 64700, serverUrl),
  ]);
  await waitFor('two cells', async () => ((await bbs.listCells()).length === 2 ? true : undefined));
});

after(() => cluster.cleanup());

describe('volumes in the cluster (issue 23)', { timeout: 600_000 }, () => {
  it('bad volumes are 400s naming the field, and nothing is desired', async () => {
    const refusals: readonly (readonly [readonly VolumeMount[], RegExp])[] = [
      [[{ name: 'data', kind: 'named', target: '/proc/x' }], /volumes\[0\]\.target.*\/proc is the kernel's/],
      [[{ name: 'data', kind: 'named', target: '/' }], /volumes\[0\]\.target/],
      [
        [
          { name: 'a', kind: 'named', target: '/d' },
          { name: 'b', kind: 'empty', target: '/d/' },
        ],
        /volumes\[1\]\.target.*"a" is mounted at \/d already/,
      ],
      [[{ name: '../etc', kind: 'named', target: '/d' }], /volumes\.0\.name/],
      [[{ name: 'h', kind: 'host' as 'named', target: '/d' }], /volumes\.0\.kind/],
    ];
    for (const [volumes, message] of refusals) {
      const response = await fetch(`${serverUrl}/v1/desired_lrps`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(lrp('bad-volumes', { volumes })),
      });
      const body = (await response.json()) as { message: string; details?: { field?: string } };
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.match(`${body.details?.field ?? ''} ${body.message}`, message);
    }
    assert.equal((await fetch(`${serverUrl}/v1/desired_lrps/bad-volumes`)).status, 404);

    const file = join(cluster.root, 'bad-system.yaml');
    writeFileSync(
      file,
      'system: badvol\nservices:\n  /db:\n    image: bb:1\n    volumes: [{name: data, kind: named, target: /sys/fs}]\n',
    );
    const r = await runBerth(['deploy', file, '--server', serverUrl]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /\/db volumes\[0\]\.target: .*\/sys is the kernel's/);
    assert.equal((await fetch(`${serverUrl}/v1/systems/badvol`)).status, 404);
  });

  it("a system's database keeps its rows across a rolling redeploy (stop-first, on its cell)", async () => {
    const definition = (version: string) => `system: store
services:
  /db:
    image: bb:1
    command: ["/bin/busybox", "sh", "-c", "echo row-$VERSION >> /var/lib/db/rows; exec /bin/busybox httpd -f -p 8080 -h /var/lib/db"]
    env: {VERSION: "${version}"}
    ports: [8080]
    monitor: {tcp: 8080}
    memory_mb: 16
    volumes: [{name: data, kind: named, target: /var/lib/db}]
`;
    const file = join(cluster.root, 'store.yaml');
    const dbInstance = async () =>
      (await bbs.listActualLRPs({ domain: 'system-store' })).find(
        (a) => a.state === 'RUNNING' && !a.evacuating,
      );
    writeFileSync(file, definition('1'));
    const first = await runBerth(['deploy', file, '--wait', '--timeout', '120s', '--server', serverUrl]);
    assert.equal(first.code, 0, `${first.stdout} ${first.stderr}`);
    const v1 = await waitFor('db v1 RUNNING', dbInstance);
    assert.equal(await instanceText(v1, '/rows'), 'row-1\n');

    writeFileSync(file, definition('2'));
    const second = await runBerth(['deploy', file, '--wait', '--timeout', '120s', '--server', serverUrl]);
    assert.equal(second.code, 0, `${second.stdout} ${second.stderr}`);
    const v2 = await waitFor('db v2 RUNNING', dbInstance);
    assert.notEqual(v2.process_guid, v1.process_guid, 'a new version');
    assert.equal(v2.cell_id, v1.cell_id, 'on the cell holding its data');
    assert.equal(await instanceText(v2, '/rows'), 'row-1\nrow-2\n', 'the rows of v1 are still there');
    const st = (await (await fetch(`${serverUrl}/v1/systems/store`)).json()) as SystemStatusJson;
    assert.equal(st.state, 'stable', JSON.stringify(st));
    const gone = await runBerth(['teardown', 'store', '--wait', '--server', serverUrl]);
    assert.equal(gone.code, 0, `${gone.stdout} ${gone.stderr}`);
  });
  it("a `colocate: pod` sidecar runs in its principal's pod: it reaches it on 127.0.0.1 and mounts its volume", async () => {
    const file = join(cluster.root, 'podside.yaml');
    writeFileSync(
      file,
      `system: podside
services:
  /web:
    image: bb:1
    command: ["/bin/busybox", "sh", "-c", "echo from-web > /shared/hello; exec /bin/busybox httpd -f -p 8080 -h /etc"]
    ports: [8080]
    monitor: {tcp: 8080}
    memory_mb: 16
    volumes: [{name: shared, kind: empty, target: /shared}]
  /web/probe:
    image: bb:1
    subordinate_to: /web
    colocate: pod
    mounts: [{volume: shared, target: /from-app, read_only: true}]
    command: ["/bin/busybox", "sh", "-c", "until [ -e /from-app/hello ] && /bin/busybox wget -q -O /tmp/got http://127.0.0.1:8080/hostname; do sleep 0.2; done; echo \\"reached $(cat /tmp/got) $(cat /from-app/hello)\\"; exec /bin/busybox sleep 3600"]
`,
    );
    const r = await runBerth(['deploy', file, '--wait', '--timeout', '120s', '--server', serverUrl]);
    assert.equal(r.code, 0, `${r.stdout} ${r.stderr}`);
    const actuals = (await bbs.listActualLRPs({ domain: 'system-podside' })).filter((a) => !a.evacuating);
    assert.equal(actuals.length, 1, 'one instance: the sidecar has no LRP of its own');
    const [web] = actuals;
    assert.ok(web && web.state === 'RUNNING');
    const desired = await bbs.getDesiredLRP({ process_guid: web.process_guid });
    assert.deepEqual(
      desired.sidecars?.map((s) => s.name),
      ['probe'],
    );
    const hostname = (await instanceText(web, '/hostname')).trim();
    // The probe is an app of the principal's pod on its cell: its log says what it fetched.
    const cellDir = join(cluster.root, web.cell_id);
    const listed = await runBerth(['list', '--dir', cellDir, '--format', 'json']);
    const pods = JSON.parse(listed.stdout) as { uuid: string; state: string }[];
    const logs = await waitFor('the probe reached its principal', async () => {
      for (const pod of pods.filter((p) => p.state === 'running')) {
        const out = await runBerth(['logs', '--dir', cellDir, '--app', 'probe', pod.uuid]);
        if (out.code === 0 && out.stdout.includes('reached')) return out.stdout;
      }
      return undefined;
    });
    // Same network (127.0.0.1 is the principal) and the principal's empty volume, shared.
    assert.equal(logs.trim(), `reached ${hostname} from-web`);
    // From any machine, through the server, by the sidecar's service: its own log and its own
    // container (/tmp/got is in the probe's root only, not the principal's).
    const viaServer = await runBerth(['logs', 'podside/web/probe', '--server', serverUrl]);
    assert.equal(viaServer.code, 0, viaServer.stderr);
    assert.equal(viaServer.stdout.trim(), `[podside/web/probe/0] reached ${hostname} from-web`);
    const principalLog = await runBerth(['logs', 'podside/web', '--server', serverUrl]);
    assert.ok(!principalLog.stdout.includes('reached'), principalLog.stdout);
    const exec = await runBerth([
      'exec',
      'podside/web/probe/0',
      '--server',
      serverUrl,
      '--',
      '/bin/busybox',
      'cat',
      '/tmp/got',
    ]);
    assert.equal(exec.code, 0, exec.stderr);
    assert.equal(exec.stdout.trim(), hostname);
    const inPrincipal = await runBerth([
      'exec',
      'podside/web/0',
      '--server',
      serverUrl,
      '--',
      '/bin/busybox',
      'cat',
      '/tmp/got',
    ]);
    assert.notEqual(inPrincipal.code, 0, 'the principal has no /tmp/got: the exec above ran in the sidecar');
    const st = (await (await fetch(`${serverUrl}/v1/systems/podside`)).json()) as SystemStatusJson;
    assert.equal(st.state, 'stable', JSON.stringify(st));
    const gone = await runBerth(['teardown', 'podside', '--wait', '--server', serverUrl]);
    assert.equal(gone.code, 0, `${gone.stdout} ${gone.stderr}`);
  });

  it("tasks mount their volumes on a real cell: a named one is the cell's, kept for the domain's later tasks there and not pinned", async () => {
    // Each task says where its named volume was (the cell's `notes`) and whether its empty one is
    // a fresh tmpfs; `set -e` fails the task when a mount is missing.
    const script =
      'set -e; grep -q " /scratch tmpfs " /proc/mounts; ls -A /scratch > /tmp/scratch; ' +
      'echo "scratch:[$(cat /tmp/scratch)]"; touch /scratch/left-behind; ' +
      'echo "$TASK" >> /notes/log';
    const task = (guid: string, cell: string): TaskDefinition => ({
      task_guid: guid,
      domain: 'tests',
      image: 'bb:1',
      command: ['/bin/busybox', 'sh', '-c', script],
      env: { TASK: guid },
      memory_mb: 16,
      disk_mb: 16,
      // In the named volume: the cell reads it where the task saw it, not in the task's root.
      result_file: '/notes/log',
      completion_callback_url: '',
      placement_tags: [cellPlacementTag(cell)],
      volumes: [
        { name: 'notes', kind: 'named', target: '/notes' },
        { name: 'scratch', kind: 'empty', target: '/scratch', tmpfs_mb: 4 },
      ],
    });
    const run = async (guid: string, cell: string): Promise<Task> => {
      await bbs.desireTask(task(guid, cell));
      const done = await waitFor(
        `task ${guid} COMPLETED`,
        async () => {
          const t = await bbs.getTask({ task_guid: guid });
          return t.state === 'COMPLETED' ? t : undefined;
        },
        120_000,
      );
      assert.equal(done.failed, false, `${guid}: ${done.failure_reason}`);
      assert.equal(done.cell_id, cell);
      return done;
    };

    assert.equal((await run('notes-1', 'c1')).result, 'notes-1\n');
    // A later task of the domain on the same cell reads what the first left in the named volume;
    // its empty volume is a fresh one (the first task's file in it is gone with its pod).
    assert.equal((await run('notes-2', 'c1')).result, 'notes-1\nnotes-2\n');
    // On another cell the named volume is that cell's own: a task is not pinned and finds no data.
    assert.equal((await run('notes-3', 'c2')).result, 'notes-3\n');
    assert.equal(readFileSync(join(volumeDir('c1', 'tests', 'notes'), 'log'), 'utf8'), 'notes-1\nnotes-2\n');
    assert.deepEqual(
      (await bbs.listVolumePins({ domain: 'tests' })).filter((p) => p.volume === 'notes'),
      [],
      "a task's named volume pins nothing",
    );
    // Its log through the server: the empty volume was empty when the task began.
    const logs = await waitFor('the finalized log of notes-2', async () => {
      const res = await fetch(`${serverUrl}/v1/containers/notes-2/logs`);
      if (!res.ok) return undefined;
      const body = (await res.json()) as { text: string };
      return body.text.includes('scratch:') ? body.text : undefined;
    });
    assert.match(logs, /^scratch:\[\]$/m);
  });

  it('an LRP with a named volume restarts after a crash on its cell, with its data, even when another cell is emptier', async () => {
    await bbs.desireLRP(lrp('vol-app'));
    const first = await waitFor('vol-app RUNNING', async () => {
      const a = await instance('vol-app');
      return a?.state === 'RUNNING' ? a : undefined;
    });
    const home = first.cell_id;
    const other = home === 'c1' ? 'c2' : 'c1';
    // Fill its cell, so an unpinned restart would go to the other (emptier) cell.
    await bbs.desireLRP({
      ...lrp('filler', { command: ['/bin/busybox', 'sleep', '3600'], volumes: [], ports: [] }),
      memory_mb: 600,
      placement_tags: [`cell:${home}`],
    });
    await waitFor('filler RUNNING on the same cell', async () => {
      const a = await instance('filler');
      return a?.state === 'RUNNING' && a.cell_id === home ? true : undefined;
    });
    assert.deepEqual(
      (await bbs.listVolumePins({ domain: 'tests' })).map((p) => [p.volume, p.index, p.cell_id]),
      [['data', 0, home]],
    );

    writeFileSync(join(volumeDir(home, 'tests', 'data', 0), 'go'), '');
    const restarted = await waitFor(
      'vol-app RUNNING again after its crash',
      async () => {
        const a = await instance('vol-app');
        return a?.state === 'RUNNING' && a.crash_count >= 1 ? a : undefined;
      },
      120_000,
    );
    assert.equal(restarted.cell_id, home, `restarted on ${restarted.cell_id}, its data is on ${home}`);
    assert.equal(await instanceText(restarted, '/runs'), 'run\nrun\n', 'both runs wrote the same volume');
    const listed = await runBerth(['volume', 'pins', '--domain', 'tests', '--server', serverUrl]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`tests\\s+data\\s+0\\s+${home}`));
    await bbs.removeDesiredLRP({ process_guid: 'filler' });

    // Its cell gone: it waits, saying why, until an operator releases the pin.
    cluster.cells.get(home)?.kill('SIGKILL');
    const waiting = await waitFor(
      'a placement error naming the gone cell',
      async () => {
        const a = await instance('vol-app');
        return a?.state === 'UNCLAIMED' && a.placement_error !== '' ? a : undefined;
      },
      60_000,
    );
    assert.match(
      waiting.placement_error,
      new RegExp(`pinned to cell ${home} by its named volumes, which is gone`),
    );
    const unpinned = await runBerth([
      'volume',
      'unpin',
      'tests',
      '--volume',
      'data',
      '--index',
      '0',
      '--server',
      serverUrl,
    ]);
    assert.equal(unpinned.code, 0, unpinned.stderr);
    assert.match(unpinned.stdout, /released 1 pin\(s\) of tests/);
    const moved = await waitFor(
      `vol-app RUNNING on ${other}`,
      async () => {
        const a = await instance('vol-app');
        return a?.state === 'RUNNING' && a.cell_id === other ? a : undefined;
      },
      60_000,
    );
    assert.equal(moved.cell_id, other);
    // A fresh volume there (one run so far), and the instance is pinned to its new cell.
    assert.equal(readFileSync(join(volumeDir(other, 'tests', 'data', 0), 'runs'), 'utf8'), 'run\n');
    assert.deepEqual(
      (await bbs.listVolumePins({ domain: 'tests' })).map((p) => p.cell_id),
      [other],
    );
    await bbs.removeDesiredLRP({ process_guid: 'vol-app' });
  });
});
