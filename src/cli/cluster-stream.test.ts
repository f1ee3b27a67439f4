import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { BbsClient, type DesiredLRPDefinition } from '../bbs/index.js';
import { execChannel, execFrame, parseExecFrame } from '../core/index.js';
import { processTree } from '../rep/process-tree.js';
import { runBerth, spawnBerth } from '../testing/berth-cli.js';
import { TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 22's logs and exec, end to end: a real `berth server`, two real `berth cell`s, runc
 * containers, and the CLI as a user runs it.
 */
const cluster = new TestCluster('berth-stream-');
let bbs: BbsClient;
let serverUrl = '';
const binBerth = fileURLToPath(new URL('../../bin/berth', import.meta.url));

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
    // A line every 100 ms naming the instance; `tick 0` again means a new container.
    command: [
      '/bin/sh',
      '-c',
      'i=0; while true; do echo "tick $i of $INSTANCE_INDEX"; i=$((i+1)); sleep 0.1; done',
    ],
    env: {},
    memory_mb: 16,
    disk_mb: 16,
    ports: [],
    routes: {},
    annotation: '',
    start_timeout_s: 60,
    placement_tags: [],
    ...extra,
  };
}

async function runningInstance(guid: string, index: number) {
  return waitFor(
    `${guid}/${index} RUNNING`,
    async () => {
      const lrps = await bbs.listActualLRPs({ process_guid: guid });
      return lrps.find((l) => l.index === index && l.state === 'RUNNING' && !l.evacuating);
    },
    60_000,
  );
}

/**
 * A cell process's open fds by kind (socket, pipe, anon_inode, file) and its descendant processes
 * on the host's side: holders, their watchers, runc and an exec's `runc exec`. Processes inside the
 * containers are not counted: the talkers' `sleep 0.1` comes and goes ten times a second.
 */
function cellResources(cellId: string): { fds: Record<string, number>; processes: number } {
  const pid = cluster.cells.get(cellId)?.pid ?? 0;
  const fds: Record<string, number> = {};
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let kind = 'file';
    try {
      kind = /^(socket|pipe|anon_inode)/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] ?? 'file';
    } catch {
      continue; // catch-all: the fd readdir itself used, closed by now
    }
    fds[kind] = (fds[kind] ?? 0) + 1;
  }
  return { fds, processes: cellProcesses(cellId).length };
}

/** The cell's descendant processes in the host's pid namespace, each as "pid: command line". */
function cellProcesses(cellId: string): string[] {
  const pid = cluster.cells.get(cellId)?.pid ?? 0;
  const hostPidNamespace = readlinkSync(`/proc/${pid}/ns/pid`);
  const found: string[] = [];
  for (const p of processTree(pid).slice(1)) {
    try {
      if (readlinkSync(`/proc/${p}/ns/pid`) !== hostPidNamespace) continue;
      found.push(`${p}: ${readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()}`);
    } catch {
      // catch-all: it exited between the listing and the read
    }
  }
  return found;
}

before(async () => {
  serverUrl = await cluster.startServer('server', '1s');
  bbs = new BbsClient(serverUrl);
  await bbs.upsertDomain({ domain: 'tests', ttl_ms: 0 });
  await Promise.all([
    cluster.startCell('s1', 'z1', 64100, serverUrl),
    cluster.startCell('s2', 'z2', 64200, serverUrl),
  ]);
  await waitFor('two cells', async () => ((await bbs.listCells()).length === 2 ? true : undefined));
  await bbs.desireLRP(lrp('talker', 2));
  await Promise.all([runningInstance('talker', 0), runningInstance('talker', 1)]);
});

after(() => cluster.cleanup());

describe('berth logs APP through the server', { timeout: 240_000 }, () => {
  it('shows lines from every instance as printed, and keeps following across a restart', async () => {
    // A log that has many lines before the tail is asked for: RUNNING can come before the second.
    await waitFor('instance 0 has printed a few lines', async () => {
      const r = await runBerth(['logs', 'talker', '--index', '0', '--server', serverUrl]);
      return /tick 5 of 0/.test(r.stdout) ? true : undefined;
    });
    const follower = spawnBerth(['logs', 'talker', '-f', '--tail', '3', '--server', serverUrl]);
    let out = '';
    follower.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
    });
    try {
      await waitFor('lines of both instances', async () =>
        /\[talker\/0\] tick \d+ of 0/.test(out) && /\[talker\/1\] tick \d+ of 1/.test(out) ? true : undefined,
      );
      // --tail 3: the backlog of each instance is at most 3 lines, then live lines follow.
      const first0 = Number(/\[talker\/0\] tick (\d+) of 0/.exec(out)?.[1]);
      assert.ok(first0 > 0, 'the tail starts past the first line of a log that has many');
      const before = await runningInstance('talker', 0);
      const cellDir = join(cluster.root, before.cell_id);
      for (const id of cluster.runcContainers(before.cell_id))
        spawnSync('runc', ['--root', join(cellDir, 'runc'), 'kill', id, 'KILL']);
      const mark = out.length;
      // A new container counts from 0 again: its lines join the same stream, with no --tail cut.
      await waitFor(
        'the restarted instance 0 in the same stream',
        async () => (out.slice(mark).includes('[talker/0] tick 0 of 0\n') ? true : undefined),
        90_000,
      );
      assert.match(out.slice(mark), /\[talker\/1\] tick \d+ of 1/, 'instance 1 kept streaming meanwhile');
      const after = await runningInstance('talker', 0);
      assert.notEqual(after.instance_guid, before.instance_guid);
      assert.equal(follower.exitCode, null, 'the follower is still running');
    } finally {
      follower.kill('SIGINT');
    }
  });

  it('--timestamps, --index and a missing app (404 with its name)', async () => {
    const one = await runBerth([
      'logs',
      'talker',
      '--index',
      '1',
      '--tail',
      '2',
      '--timestamps',
      '--server',
      serverUrl,
    ]);
    assert.equal(one.code, 0, one.stderr);
    const lines = one.stdout.trim().split('\n');
    assert.equal(lines.length, 2);
    for (const line of lines) assert.match(line, /^\d{4}-\d\d-\d\dT[\d:.]+Z \[talker\/1\] tick \d+ of 1$/);
    const missing = await runBerth(['logs', 'nosuch', '--server', serverUrl]);
    assert.equal(missing.code, 3);
    assert.match(missing.stderr, /app "nosuch"/);
  });
});

/** `berth exec` under a pty of its own: script(1) gives it a terminal of 100×30. */
function execWithTty(args: string): Promise<{ code: number | null; out: string }> {
  const child = spawn(
    'script',
    ['-qfec', `stty cols 100 rows 30; ${binBerth} exec -t ${args}`, '/dev/null'],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, BERTH_SERVER: serverUrl, SHELL: '/bin/sh' },
    },
  );
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    out += c.toString();
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, out })));
}

describe('berth exec APP/INDEX through the server', { timeout: 240_000 }, () => {
  it('propagates exit codes 0 and 42, and passes stdout and stderr apart', async () => {
    const ok = await runBerth([
      'exec',
      'talker/1',
      '--server',
      serverUrl,
      '--',
      '/bin/sh',
      '-c',
      'echo out; echo err >&2',
    ]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, 'out\n');
    assert.equal(ok.stderr, 'err\n');
    const failed = await runBerth([
      'exec',
      'talker/1',
      '--server',
      serverUrl,
      '--',
      '/bin/sh',
      '-c',
      'exit 42',
    ]);
    assert.equal(failed.code, 42, failed.stderr);
  });

  it("with -t the command has a terminal of the caller's size, and its exit code is berth's", async () => {
    const run = await execWithTty("talker/0 -- /bin/sh -c 'tty; stty size; exit 42'");
    assert.equal(run.code, 42, run.out);
    assert.match(run.out, /\/dev\/pts\/\d+/);
    assert.match(run.out, /30 100/);
    const zero = await execWithTty('talker/0 -- /bin/true');
    assert.equal(zero.code, 0, zero.out);
  });

  it('a window resize reaches the command (the protocol, driven directly)', async () => {
    const res = await fetch(`${serverUrl}/v1/exec`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        app: 'talker',
        index: 1,
        command: ['/bin/sh'],
        tty: true,
        stdin: true,
        cols: 80,
        rows: 24,
      }),
    });
    assert.equal(res.status, 201, await res.clone().text());
    const { path } = (await res.json()) as { path: string };
    const ws = new WebSocket(`${serverUrl.replace('http', 'ws')}${path}`);
    let out = '';
    let exit: number | undefined;
    ws.on('message', (data: Buffer) => {
      const frame = parseExecFrame(data);
      if (frame?.channel === execChannel.stdout) out += frame.payload.toString();
      if (frame?.channel === execChannel.exit)
        exit = (JSON.parse(frame.payload.toString()) as { exit_code: number }).exit_code;
    });
    await new Promise((r) => ws.once('open', r));
    // Keys typed before runc has put the terminal in raw mode can be discarded with the terminal's
    // pending input (a loaded CI machine showed it): ask again every 2 s until the shell answers.
    let asked = 0;
    await waitFor('the first size', async () => {
      if (out.includes('24 80')) return true;
      if (asked++ % 8 === 0) ws.send(execFrame(execChannel.stdin, 'stty size\n'));
      return undefined;
    });
    ws.send(execFrame(execChannel.resize, JSON.stringify({ cols: 132, rows: 43 })));
    await new Promise((r) => setTimeout(r, 300));
    ws.send(execFrame(execChannel.stdin, 'stty size; exit 7\n'));
    await waitFor('the new size and the exit', async () =>
      out.includes('43 132') && exit === 7 ? true : undefined,
    );
  });

  it('a missing instance is 404 and one that does not run 409, each with a message', async () => {
    const app = await runBerth(['exec', 'nosuch/0', '--server', serverUrl, '--', 'true']);
    assert.equal(app.code, 3);
    assert.match(app.stderr, /app "nosuch"/);
    const index = await runBerth(['exec', 'talker/7', '--server', serverUrl, '--', 'true']);
    assert.equal(index.code, 3);
    assert.match(index.stderr, /instance talker\/7/);
    // A monitor that never passes keeps the instance CLAIMED: its container runs, it is not RUNNING.
    await bbs.desireLRP(lrp('starting', 1, { ports: [8080], monitor: { tcp: 8080 }, start_timeout_s: 600 }));
    await waitFor('starting/0 CLAIMED', async () => {
      const [l] = await bbs.listActualLRPs({ process_guid: 'starting' });
      return l?.state === 'CLAIMED' ? true : undefined;
    });
    const claimed = await runBerth(['exec', 'starting/0', '--server', serverUrl, '--', 'true']);
    assert.equal(claimed.code, 4, claimed.stderr);
    assert.match(claimed.stderr, /Cannot exec into starting\/0: it is CLAIMED, not RUNNING/);
    const raw = await fetch(`${serverUrl}/v1/exec`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ app: 'starting', index: 0, command: ['true'] }),
    });
    assert.equal(raw.status, 409);
  });
});

describe('a client that goes away mid-stream', { timeout: 240_000 }, () => {
  it('leaves no fd or process behind on the cell (logs -f and exec)', async () => {
    const target = await runningInstance('talker', 1);
    const cell = target.cell_id;
    // The baseline is taken on a quiet cell: a pod of an earlier test may still be starting there
    // (`starting` is CLAIMED before its container runs), and its runc processes come and go.
    let previous = '';
    let quietSince = Date.now();
    const baselineProcesses = await waitFor('the cell quiet for a second', async () => {
      const now = cellProcesses(cell);
      const key = JSON.stringify(now);
      if (key !== previous) [previous, quietSince] = [key, Date.now()];
      return Date.now() - quietSince >= 1_000 ? now : undefined;
    });
    const baseline = cellResources(cell);
    for (let round = 0; round < 3; round++) {
      // A follower that reads a few lines and hangs up.
      const abort = new AbortController();
      const res = await fetch(`${serverUrl}/v1/logs?app=talker&index=1&follow=true`, {
        signal: abort.signal,
      });
      const reader = res.body?.getReader();
      await reader?.read();
      await reader?.read();
      abort.abort();
      // An exec of a long command whose client vanishes (no close handshake).
      const post = await fetch(`${serverUrl}/v1/exec`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          app: 'talker',
          index: 1,
          command: ['/bin/sh', '-c', 'sleep 1000 & sleep 1000'],
          tty: round === 1,
          stdin: true,
        }),
      });
      const { path } = (await post.json()) as { path: string };
      const ws = new WebSocket(`${serverUrl.replace('http', 'ws')}${path}`);
      await new Promise((r) => ws.once('open', r));
      await waitFor('the exec running on the cell', async () =>
        cellResources(cell).processes > baseline.processes ? true : undefined,
      );
      ws.terminate();
    }
    const settled = await waitFor(
      'the cell back to its baseline',
      async () => {
        const now = cellResources(cell);
        const same =
          now.processes === baseline.processes &&
          (now.fds.pipe ?? 0) === (baseline.fds.pipe ?? 0) &&
          (now.fds.anon_inode ?? 0) === (baseline.fds.anon_inode ?? 0) &&
          (now.fds.file ?? 0) === (baseline.fds.file ?? 0) &&
          // Sockets: the server's pooled keep-alive connection to the rep may stay open.
          (now.fds.socket ?? 0) <= (baseline.fds.socket ?? 0) + 2;
        return same ? now : undefined;
      },
      30_000,
    ).catch((err: unknown) => {
      throw new Error(
        `${String(err)}: baseline ${JSON.stringify(baseline)} ${JSON.stringify(baselineProcesses)}, now ${JSON.stringify(cellResources(cell))} ${JSON.stringify(cellProcesses(cell))}`,
      );
    });
    assert.equal(settled.processes, baseline.processes);
    // And no process of the execs is left in the container either.
    const exec = await runBerth([
      'exec',
      'talker/1',
      '--server',
      serverUrl,
      '--',
      '/bin/sh',
      '-c',
      'ps | grep "[s]leep 1000" | wc -l',
    ]);
    assert.equal(exec.stdout.trim(), '0', exec.stdout);
  });
});
