import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ActualLRP, BbsClient, type DesiredLRPDefinition } from '../bbs/index.js';
import { oomDetectable } from '../runtime/pod-cgroup.js';
import { runBerth } from '../testing/berth-cli.js';
import { TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 4's "must show", end to end: one `berth server` and three `berth cell` processes (three
 * zones), real runc containers, real CNI host ports, every interval shrunk by flags.
 */
const cluster = new TestCluster('berth-cluster-');
const root = cluster.root;
const cells = cluster.cells;
let bbs: BbsClient;
let serverUrl = '';

function startCellProcess(
  id: string,
  zone: string,
  portBase: number,
  server = () => serverUrl,
): Promise<void> {
  return cluster.startCell(id, zone, portBase, server());
}

function lrp(
  processGuid: string,
  instances: number,
  extra: Partial<DesiredLRPDefinition> = {},
): DesiredLRPDefinition {
  return {
    process_guid: processGuid,
    domain: 'tests',
    instances,
    image: 'bb:1',
    command: ['/bin/busybox', 'httpd', '-f', '-p', '8080', '-h', '/etc'],
    env: {},
    memory_mb: 16,
    disk_mb: 16,
    ports: [8080],
    routes: {},
    annotation: '',
    monitor: { tcp: 8080 },
    start_timeout_s: 60,
    placement_tags: [],
    ...extra,
  };
}

const running = (actuals: readonly ActualLRP[]) =>
  actuals.filter((a) => a.state === 'RUNNING' && !a.evacuating);

function startServer(name: string, convergenceInterval: string): Promise<string> {
  return cluster.startServer(name, convergenceInterval);
}

before(async () => {
  serverUrl = await startServer('server', '1s');
  bbs = new BbsClient(serverUrl);
  await bbs.upsertDomain({ domain: 'tests', ttl_ms: 0 });
  await Promise.all([
    startCellProcess('c1', 'z1', 62000),
    startCellProcess('c2', 'z2', 62100),
    startCellProcess('c3', 'z3', 62200),
  ]);
  await waitFor('three cells', async () => ((await bbs.listCells()).length === 3 ? true : undefined));
});

after(() => cluster.cleanup());

describe('a desired LRP kept running across three cells', { timeout: 600_000 }, () => {
  it('10 instances → all RUNNING, spread over cells and zones, each reachable on its host port', async () => {
    await bbs.desireLRP(lrp('web', 10));
    const actuals = await waitFor(
      '10 RUNNING',
      async () => {
        const list = running(await bbs.listActualLRPs({ process_guid: 'web' }));
        return list.length === 10 ? list : undefined;
      },
      120_000,
    );
    const perCell = new Map<string, number>();
    for (const a of actuals) perCell.set(a.cell_id, (perCell.get(a.cell_id) ?? 0) + 1);
    assert.equal(perCell.size, 3, `spread over all cells: ${JSON.stringify([...perCell])}`);
    for (const count of perCell.values()) assert.ok(count >= 3 && count <= 4, JSON.stringify([...perCell]));
    for (const a of actuals) {
      const port = a.ports[0]?.host_port;
      assert.ok(port, `instance ${a.index} has a host port`);
      const body = await waitFor(`instance ${a.index} answers`, async () => {
        const response = await fetch(`http://${a.address}:${port}/hostname`, {
          signal: AbortSignal.timeout(2000),
        });
        return response.ok ? response.text() : undefined;
      });
      assert.ok(body.trim().length > 0);
    }
  });

  it('scale 10 → 3 stops and removes the extra instances; scaling up again reuses the indices', async () => {
    await bbs.updateDesiredLRP({ process_guid: 'web', update: { instances: 3 } });
    await waitFor('3 instances left', async () => {
      const list = await bbs.listActualLRPs({ process_guid: 'web' });
      return list.length === 3 && list.every((a) => a.index < 3) ? true : undefined;
    });
    await bbs.updateDesiredLRP({ process_guid: 'web', update: { instances: 5 } });
    const list = await waitFor(
      '5 RUNNING again',
      async () => {
        const l = running(await bbs.listActualLRPs({ process_guid: 'web' }));
        return l.length === 5 ? l : undefined;
      },
      120_000,
    );
    assert.deepEqual(list.map((a) => a.index).sort(), [0, 1, 2, 3, 4]);
  });

  it('an app that exits at once: restarted at once twice, CRASHED at the third crash, then restarted on the back-off', async () => {
    await bbs.desireLRP(
      lrp('crasher', 1, { command: ['/bin/sh', '-c', 'exit 3'], monitor: undefined as never, ports: [] }),
    );
    const seen = new Set<string>();
    const crashed = await waitFor(
      'CRASHED with count 3',
      async () => {
        const [a] = await bbs.listActualLRPs({ process_guid: 'crasher' });
        if (a) seen.add(`${a.state}:${a.crash_count}`);
        return a?.state === 'CRASHED' && a.crash_count >= 3 ? a : undefined;
      },
      120_000,
    );
    assert.ok(
      !seen.has('CRASHED:1') && !seen.has('CRASHED:2'),
      `never CRASHED before the third crash: ${[...seen].join(' ')}`,
    );
    assert.ok(crashed.last_crashed_at);
    // crash-backoff-base 2s: the converger restarts it after 2 s; the fourth crash follows.
    const later = await waitFor(
      'restarted after its back-off',
      async () => {
        const [a] = await bbs.listActualLRPs({ process_guid: 'crasher' });
        return a && a.crash_count >= 4 ? a : undefined;
      },
      60_000,
    );
    const gap = Date.parse(later.last_crashed_at ?? '') - Date.parse(crashed.last_crashed_at ?? '');
    assert.ok(gap >= 2000, `the restart waited for the back-off (gap ${gap} ms)`);
    // Every crashed container has its own record with history, delivered from the cell's journal.
    const records = await waitFor('history of the crashes', async () => {
      const response = await fetch(`${serverUrl}/v1/containers?status=Failed&limit=100`);
      const body = (await response.json()) as {
        containers: { id: string; owner_id: string; history: unknown[] }[];
      };
      const mine = body.containers.filter((c) => c.owner_id === 'crasher/0');
      return mine.length >= 3 ? mine : undefined;
    });
    const detail = (await (await fetch(`${serverUrl}/v1/containers/${records[0]?.id}`)).json()) as {
      status: string;
      history: { status: string; entity_type: string; exit_code: number | null }[];
    };
    assert.equal(detail.status, 'Failed');
    assert.ok(
      detail.history.some((h) => h.entity_type === 'event' && h.exit_code === 3),
      JSON.stringify(detail.history),
    );
    await bbs.removeDesiredLRP({ process_guid: 'crasher' });
  });

  it('an app killed by the kernel at its memory limit: its history says "Killed (Out of Memory)"', async (t) => {
    if (!oomDetectable()) {
      t.skip('cgroup v2 without a delegable memory controller here: OOM kills cannot be told from kill -9');
      return;
    }
    // No monitor: the app is RUNNING at once, then killed as it fills its memory.
    const { monitor: _monitor, ...hog } = lrp('hog', 1, {
      memory_mb: 16,
      command: ['/bin/sh', '-c', 'sleep 1; x=$(head -c 67108864 /dev/zero | tr "\\0" a); echo survived'],
      ports: [],
    });
    await bbs.desireLRP(hog);
    const detail = await waitFor(
      'an OOM-killed container in the history',
      async () => {
        const response = await fetch(`${serverUrl}/v1/containers?limit=100`);
        const body = (await response.json()) as { containers: { id: string; owner_id: string }[] };
        for (const c of body.containers.filter((x) => x.owner_id === 'hog/0')) {
          const d = (await (await fetch(`${serverUrl}/v1/containers/${c.id}`)).json()) as {
            status: string;
            history: {
              status: string;
              entity_type: string;
              exit_code: number | null;
              message: string | null;
            }[];
          };
          if (d.history.some((h) => h.status === 'Killed (Out of Memory)')) return d;
        }
        return undefined;
      },
      120_000,
    );
    const oom = detail.history.find((h) => h.status === 'Killed (Out of Memory)');
    assert.equal(oom?.entity_type, 'event');
    assert.equal(oom?.exit_code, 137);
    assert.match(oom?.message ?? '', /out of memory/);
    const actual = (await bbs.listActualLRPs({ process_guid: 'hog' }))[0];
    assert.match(actual?.crash_reason ?? '', /out of memory/, 'the ActualLRP says why it crashed');
    await bbs.removeDesiredLRP({ process_guid: 'hog' });
  });

  it('an image pushed into the server by skopeo runs on a cell; an image no registry has is a placement error, not a crash loop', async () => {
    const host = serverUrl.replace(/^http:\/\//, '');
    const layout = join(root, 'skopeo-layout');
    const skopeo = (args: string[]) => {
      const r = spawnSync('skopeo', args, { encoding: 'utf8', timeout: 120_000 });
      assert.equal(r.status, 0, `skopeo ${args.join(' ')}: ${r.stdout}${r.stderr}`);
    };
    // Out through the registry into an OCI layout, and back in under a new name: a real skopeo push.
    skopeo(['copy', '--src-tls-verify=false', `docker://${host}/bb:1`, `oci:${layout}:bb`]);
    skopeo(['copy', '--dest-tls-verify=false', `oci:${layout}:bb`, `docker://${host}/pushed/tools:7`]);
    await bbs.desireLRP(lrp('pushed', 1, { image: 'pushed/tools:7' }));
    await waitFor('the skopeo-pushed image RUNNING on a cell', async () =>
      running(await bbs.listActualLRPs({ process_guid: 'pushed' })).length === 1 ? true : undefined,
    );
    await bbs.removeDesiredLRP({ process_guid: 'pushed' });

    const { monitor: _monitor, ...missing } = lrp('no-image', 1, { image: 'nowhere/none:1', ports: [] });
    await bbs.desireLRP(missing);
    // A placement error, not a crash loop: given back UNCLAIMED, never counted as a crash.
    const failed = await waitFor('the instance with a missing image has a placement error', async () => {
      const [a] = await bbs.listActualLRPs({ process_guid: 'no-image' });
      return a?.placement_error ? a : undefined;
    });
    assert.match(failed.placement_error, /nowhere\/none:1/, failed.placement_error);
    assert.equal(failed.state, 'UNCLAIMED');
    assert.equal(failed.crash_count, 0);
    await bbs.removeDesiredLRP({ process_guid: 'no-image' });
  });

  it('drain a cell while a 2-instance app runs on it: at every moment at least one instance RUNNING', async () => {
    await bbs.updateDesiredLRP({ process_guid: 'web', update: { instances: 0 } });
    await waitFor('web gone', async () =>
      (await bbs.listActualLRPs({ process_guid: 'web' })).length === 0 ? true : undefined,
    );
    await bbs.desireLRP(lrp('pair', 2));
    const placed = await waitFor(
      'pair RUNNING',
      async () => {
        const l = running(await bbs.listActualLRPs({ process_guid: 'pair' }));
        return l.length === 2 ? l : undefined;
      },
      120_000,
    );
    const target = placed[0]?.cell_id ?? '';
    let minRunning = 2;
    let done = false;
    const watcher = (async () => {
      while (!done) {
        const all = await bbs.listActualLRPs({ process_guid: 'pair' });
        // An evacuating copy still serves traffic: count instances with any RUNNING copy.
        const indices = new Set(all.filter((a) => a.state === 'RUNNING').map((a) => a.index));
        minRunning = Math.min(minRunning, indices.size);
        await sleep(100);
      }
    })();
    const drained = await runBerth(['cell', 'drain', target, '--server', serverUrl]);
    assert.equal(drained.code, 0, drained.stderr);
    const cellProcess = cells.get(target);
    await waitFor(
      'the drained cell exits',
      async () => (cellProcess?.exitCode !== null ? true : undefined),
      120_000,
    );
    const after = await waitFor(
      'pair RUNNING elsewhere',
      async () => {
        const l = running(await bbs.listActualLRPs({ process_guid: 'pair' }));
        return l.length === 2 && l.every((a) => a.cell_id !== target) ? l : undefined;
      },
      120_000,
    );
    done = true;
    await watcher;
    assert.ok(minRunning >= 1, 'never zero instances RUNNING during the drain');
    assert.equal(after.length, 2);
    // The rep removes its presence as evacuation ends; once (1 in ~10 CI runs) the row was still
    // listed right after the process exited, so allow the presence TTL (3 s) too.
    await waitFor(
      `the drained cell left: ${cluster.cellLogs.get(target)?.slice(-3000)}`,
      async () => ((await bbs.listCells()).some((c) => c.cell_id === target) ? undefined : true),
      10_000,
    );
  });

  it('kill -9 a cell → its instances RUNNING elsewhere after the presence TTL and a convergence pass', async () => {
    const before = running(await bbs.listActualLRPs({ process_guid: 'pair' }));
    const victimCell = before[0]?.cell_id ?? '';
    cells.get(victimCell)?.kill('SIGKILL');
    const moved = await waitFor(
      'instances moved',
      async () => {
        const l = running(await bbs.listActualLRPs({ process_guid: 'pair' }));
        return l.length === 2 && l.every((a) => a.cell_id !== victimCell) ? l : undefined;
      },
      120_000,
    );
    assert.equal(moved.length, 2);
  });
});

describe('the rep keeps the BBS true to what runs', { timeout: 300_000 }, () => {
  it('stale BBS state: a RUNNING row deleted under a running container is recreated by its rep', async () => {
    // Its own server, whose converger would take a minute: only the rep can bring the row back.
    const url = await startServer('stale-server', '60s');
    const client = new BbsClient(url);
    await startCellProcess('s1', 'z1', 62300, () => url);
    await client.desireLRP(lrp('stale', 1));
    const [victim] = await waitFor('stale RUNNING', async () => {
      const l = running(await client.listActualLRPs({ process_guid: 'stale' }));
      return l.length === 1 ? l : undefined;
    });
    assert.ok(victim);
    await client.removeActualLRP({
      process_guid: 'stale',
      index: victim.index,
      expected: victim.modification_tag,
    });
    const back = await waitFor('the row back', async () => {
      const group = await client
        .getActualLRP({ process_guid: 'stale', index: victim.index })
        .catch(() => undefined);
      return group?.instance?.state === 'RUNNING' ? group.instance : undefined;
    });
    assert.equal(back.cell_id, 's1');
    assert.equal(back.instance_guid, victim.instance_guid);
  });

  it('two reps racing to start one task: exactly one runs it, at most once', async () => {
    const url = await startServer('race-server', '60s');
    const client = new BbsClient(url);
    await Promise.all([
      startCellProcess('r1', 'z1', 62400, () => url),
      startCellProcess('r2', 'z1', 62500, () => url),
    ]);
    const reps = await waitFor('two reps', async () => {
      const live = await client.listCells();
      return live.length === 2 ? live : undefined;
    });
    // A tag no cell has: the auctioneer never places it, so only the two racing offers below do.
    await client.desireTask({
      task_guid: 't-race',
      domain: 'tests',
      image: 'bb:1',
      command: ['/bin/sh', '-c', 'echo -n ran > /tmp/out'],
      env: {},
      memory_mb: 16,
      disk_mb: 16,
      result_file: '/tmp/out',
      completion_callback_url: '',
      placement_tags: ['nowhere'],
    });
    const work = {
      lrps: [],
      tasks: [{ task_guid: 't-race', domain: 'tests', memory_mb: 16, disk_mb: 16, placement_tags: [] }],
    };
    const answers = await Promise.all(
      reps.map((cell) =>
        fetch(`${cell.rep_url}/v1/work`, {
          method: 'POST',
          headers: {
            // The rep answers only its token's holder; the test reads it where the cell keeps it.
            authorization: `Bearer ${readFileSync(join(root, cell.cell_id, 'rep.token'), 'utf8').trim()}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify(work),
        }).then((r) => r.json() as Promise<{ failed_tasks: unknown[] }>),
      ),
    );
    assert.ok(
      answers.every((a) => a.failed_tasks.length === 0),
      'both reps reserved it',
    );
    const done = await waitFor(
      't-race COMPLETED',
      async () => {
        const t = await client.getTask({ task_guid: 't-race' });
        return t.state === 'COMPLETED' ? t : undefined;
      },
      120_000,
    );
    assert.equal(done.failed, false, done.failure_reason);
    assert.equal(done.result, 'ran');
    // Both cells journal every container they start into the history (a task's container id is
    // its guid): exactly one start ever happened.
    const history = await waitFor('t-race history', async () => {
      const response = await fetch(`${url}/v1/containers/t-race`);
      if (!response.ok) return undefined;
      const record = (await response.json()) as {
        status: string;
        history: { status: string; entity_type: string }[];
      };
      return record.status === 'Complete' ? record : undefined;
    });
    const starts = history.history.filter((h) => h.status === 'Running' && h.entity_type === 'event');
    assert.equal(starts.length, 1, JSON.stringify(history.history));
    assert.equal(done.cell_id === 'r1' || done.cell_id === 'r2', true);
  });
});

describe('tasks on real cells', { timeout: 300_000 }, () => {
  const task = (guid: string, command: string[], extra: Record<string, unknown> = {}) => ({
    task_guid: guid,
    domain: 'tests',
    image: 'bb:1',
    command,
    env: {},
    memory_mb: 16,
    disk_mb: 16,
    result_file: '',
    completion_callback_url: '',
    placement_tags: [],
    ...extra,
  });
  const completed = (guid: string) =>
    waitFor(
      `task ${guid} COMPLETED`,
      async () => {
        const t = await bbs.getTask({ task_guid: guid });
        return t.state === 'COMPLETED' ? t : undefined;
      },
      120_000,
    );

  it('a task that writes its result file completes with that result', async () => {
    await bbs.desireTask(
      task('t-result', ['/bin/sh', '-c', 'echo -n forty-two > /tmp/result'], { result_file: '/tmp/result' }),
    );
    const done = await completed('t-result');
    assert.equal(done.failed, false, done.failure_reason);
    assert.equal(done.result, 'forty-two');
  });

  it('a failing task completes failed with its exit status in failure_reason', async () => {
    await bbs.desireTask(task('t-fail', ['/bin/sh', '-c', 'exit 7']));
    const done = await completed('t-fail');
    assert.equal(done.failed, true);
    assert.match(done.failure_reason, /7/);
  });

  it('a task whose image no registry has completes failed, naming the image', async () => {
    await bbs.desireTask(task('t-no-image', ['/bin/true'], { image: 'nowhere/none:2' }));
    const done = await completed('t-no-image');
    assert.equal(done.failed, true);
    assert.match(done.failure_reason, /nowhere\/none:2/);
  });

  it('cancel mid-run → COMPLETED failed "task was cancelled", and its container is destroyed', async () => {
    await bbs.desireTask(task('t-cancel', ['/bin/sleep', '1000']));
    const runningTask = await waitFor(
      't-cancel RUNNING',
      async () => {
        const t = await bbs.getTask({ task_guid: 't-cancel' });
        return t.state === 'RUNNING' ? t : undefined;
      },
      120_000,
    );
    await bbs.cancelTask({ task_guid: 't-cancel' });
    const done = await bbs.getTask({ task_guid: 't-cancel' });
    assert.equal(done.state, 'COMPLETED');
    assert.equal(done.failure_reason, 'task was cancelled');
    const cellDir = join(root, runningTask.cell_id);
    await waitFor('the container gone', async () => {
      const result = await runBerth(['list', '--dir', cellDir, '--format', 'json']);
      // A failed list is retried; if it keeps failing, the time-out names why (CI saw one once).
      if (result.code !== 0) throw new Error(`berth list exited ${result.code}: ${result.stderr.trim()}`);
      const pods = JSON.parse(result.stdout) as { name: string; state: string }[];
      const still = pods.find((p) => p.name === 't-cancel' && p.state === 'running');
      // Thrown, not undefined: if it never goes, the time-out shows the pod as last listed.
      if (still) throw new Error(`t-cancel's pod is still listed running: ${JSON.stringify(still)}`);
      return true;
    });
  });

  it('kill -9 the cell running a task → the task fails "cell disappeared before completion" and never runs again', async () => {
    await bbs.desireTask(task('t-orphan', ['/bin/sleep', '1000']));
    const runningTask = await waitFor(
      't-orphan RUNNING',
      async () => {
        const t = await bbs.getTask({ task_guid: 't-orphan' });
        return t.state === 'RUNNING' ? t : undefined;
      },
      120_000,
    );
    cells.get(runningTask.cell_id)?.kill('SIGKILL');
    const done = await completed('t-orphan');
    assert.equal(done.failed, true);
    assert.equal(done.failure_reason, 'cell disappeared before completion');
    assert.equal(done.cell_id, runningTask.cell_id, 'never moved to another cell');
  });

  it('a drained cell takes no new task, and a task still running at the evacuation timeout fails saying so', async () => {
    // A cell of its own (required tag "evac"), so the tasks can only go there.
    await cluster.startCell('e1', 'z1', 62600, serverUrl, ['--tags', 'evac', '--evacuation-timeout', '3s']);
    await bbs.desireTask(task('t-evac', ['/bin/sleep', '1000'], { placement_tags: ['evac'] }));
    await waitFor(
      't-evac RUNNING on e1',
      async () => {
        const t = await bbs.getTask({ task_guid: 't-evac' });
        return t.state === 'RUNNING' && t.cell_id === 'e1' ? t : undefined;
      },
      120_000,
    );
    const e1 = cells.get('e1')!;
    const exited = new Promise<number | null>((resolve) => e1.once('exit', resolve));
    e1.kill('SIGTERM'); // drain: evacuate, then exit
    // The signal is handled on the cell's next turn of its event loop; work that reaches it before
    // then is taken, as it would be a moment before any drain. So the test waits for the drain.
    await waitFor('e1 began to evacuate', async () =>
      cluster.cellLogs.get('e1')?.includes('evacuating: new work is refused') ? true : undefined,
    );
    // While it drains, new work for it is refused: this task stays PENDING.
    await bbs.desireTask(task('t-after-drain', ['/bin/true'], { placement_tags: ['evac'] }));
    const done = await completed('t-evac');
    assert.equal(done.failed, true);
    assert.equal(done.failure_reason, 'cell was evacuated before the task completed');
    assert.equal(await exited, 0, 'the drained cell exits cleanly');
    assert.deepEqual(cluster.runcContainers('e1'), [], 'its container is gone');
    const pending = await bbs.getTask({ task_guid: 't-after-drain' });
    assert.equal(pending.state, 'PENDING', 'the draining cell took no new task');
    assert.equal(pending.cell_id, '');
  });
});

describe('history across a cell restart', { timeout: 300_000 }, () => {
  it('a container that ended while its cell was down is recorded when the cell restarts, as found by looking', async () => {
    await cluster.startCell('h1', 'z1', 62700, serverUrl, ['--tags', 'hist']);
    const { monitor: _monitor, ...blip } = lrp('blip', 1, {
      command: ['/bin/sh', '-c', 'sleep 4; exit 5'],
      ports: [],
      placement_tags: ['hist'],
    });
    await bbs.desireLRP(blip);
    const first = await waitFor('blip RUNNING on h1', async () => {
      const [a] = running(await bbs.listActualLRPs({ process_guid: 'blip' }));
      return a?.cell_id === 'h1' ? a : undefined;
    });
    const h1 = cells.get('h1')!;
    const gone = new Promise((resolve) => h1.once('exit', resolve));
    h1.kill('SIGKILL');
    await gone;
    // The pod outlives its cell and ends on its own while nobody watches.
    await waitFor(
      'the pod ended',
      async () => {
        const r = await runBerth(['list', '--dir', join(root, 'h1'), '--format', 'json']);
        const pods = JSON.parse(r.stdout) as { state: string; exit_code: number | null }[];
        return pods.some((p) => p.state === 'exited' && p.exit_code === 5) ? true : undefined;
      },
      60_000,
    );
    await cluster.startCell('h1', 'z1', 62700, serverUrl, ['--tags', 'hist']);
    const item = await waitFor('the end in the history', async () => {
      const res = await fetch(`${serverUrl}/v1/containers/${first.instance_guid}`);
      if (!res.ok) return undefined;
      const record = (await res.json()) as {
        history: {
          entity_type: string;
          exit_code: number | null;
          message: string | null;
          external_timestamp: string | null;
        }[];
      };
      return record.history.find((h) => h.exit_code === 5);
    });
    assert.equal(item.entity_type, 'service');
    assert.match(item.message ?? '', /found ended when the cell started/);
    assert.ok(item.external_timestamp, 'the time the pod really ended, not the restart');
    await bbs.removeDesiredLRP({ process_guid: 'blip' });
  });
});
