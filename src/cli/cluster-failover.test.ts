import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ActualLRP, BbsClient, type DesiredLRPDefinition } from '../bbs/index.js';
import { HistoryClient } from '../history/index.js';
import { runBerth, spawnBerth } from '../testing/berth-cli.js';
import { firstLine, TestCluster, waitFor } from '../testing/cluster-harness.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';

/**
 * Issue 20's "must show" for several servers: two `berth server` processes on one PostgreSQL and a
 * real cell given both (`--bbs A,B`). kill -9 of the server the cell talks to (the first: a
 * client stays with the first server while it answers): the instances keep running, new work is
 * placed through the other server, and no history item is lost, including the report of a
 * container that ended after the kill. A router given both servers follows the other one's events:
 * the new work is reachable by its route.
 */
describe('a cell given two servers on one PostgreSQL', {
  skip: postgresSkipReason() ?? false,
  timeout: 300_000,
}, () => {
  const cluster = new TestCluster('berth-failover-');
  let pg: PostgresServer;
  let first = '';
  let second = '';
  let firstProcess: ChildProcess;
  let routerPort = 0;

  before(async () => {
    pg = await startPostgres('failover');
    const shared = ['--db', pg.url, '--event-poll', '100ms'];
    first = await cluster.startServer('s1', '1s', shared);
    firstProcess = cluster.processes.at(-1)!;
    second = await cluster.startServer('s2', '1s', shared);
    await new BbsClient(first).upsertDomain({ domain: 'tests', ttl_ms: 0 });
    await cluster.startCell('f1', 'z1', 62900, `${first},${second}`);
    const router = spawnBerth(['router', '--bbs', `${first},${second}`, '--listen', '127.0.0.1:0']);
    cluster.processes.push(router);
    routerPort = Number(new URL(await firstLine(router)).port);
  });

  /**
   * GET /hosts through the router for `host` (the instance's httpd serves /etc, and berth gives
   * every container an /etc/hosts): its status, 0 when the router did not answer.
   */
  const viaRouter = (host: string) =>
    new Promise<number>((resolve) => {
      const req = request(
        { host: '127.0.0.1', port: routerPort, path: '/hosts', headers: { host } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', () => resolve(0));
      req.end();
    });
  after(async () => {
    await cluster.cleanup();
    await pg?.stop();
  });

  function lrp(processGuid: string, extra: Partial<DesiredLRPDefinition> = {}): DesiredLRPDefinition {
    return {
      process_guid: processGuid,
      domain: 'tests',
      instances: 1,
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
  const runningOn = async (bbs: BbsClient, guid: string, count: number) => {
    const actuals = (await bbs.listActualLRPs({ process_guid: guid })).filter((a) => a.state === 'RUNNING');
    return actuals.length === count ? actuals : undefined;
  };
  const historyIds = async (history: HistoryClient, actuals: readonly ActualLRP[]) => {
    const ids: string[] = [];
    for (const a of actuals)
      ids.push(...(await history.getContainer(a.instance_guid)).history.map((h) => h.id));
    return ids;
  };

  it('kill -9 of its server: instances keep running, new work goes through the other, no history item lost', async () => {
    const viaFirst = new BbsClient(first);
    await viaFirst.desireLRP(lrp('steady', { instances: 2 }));
    const steady = await waitFor('steady RUNNING', () => runningOn(viaFirst, 'steady', 2));
    // A container that ends on its own a few seconds after the kill: its exit is reported while
    // the cell's server is gone, so only the other server can record it.
    const { monitor: _m, ...blinkDefinition } = lrp('blink', {
      command: ['/bin/sh', '-c', 'sleep 5; exit 3'],
      ports: [],
    });
    await viaFirst.desireLRP(blinkDefinition);
    const [blink] = await waitFor('blink RUNNING', () => runningOn(viaFirst, 'blink', 1));
    const before = await historyIds(new HistoryClient(first), steady);
    assert.ok(before.length >= 2, 'the steady instances have history');

    firstProcess.kill('SIGKILL');
    await new Promise((resolve) =>
      firstProcess.exitCode !== null ? resolve(null) : firstProcess.once('exit', resolve),
    );
    const viaSecond = new BbsClient(second);
    const history = new HistoryClient(second);

    // New work, placed through the other server onto the cell.
    const freshHost = 'fresh.test.berth.localhost';
    await viaSecond.desireLRP(lrp('fresh', { routes: [{ hostname: freshHost, port: 8080 }] }));
    const [fresh] = await waitFor('fresh RUNNING through the second server', () =>
      runningOn(viaSecond, 'fresh', 1),
    );
    assert.equal(fresh!.cell_id, 'f1');
    // The router lost the first server too: its route table now follows the second.
    await waitFor('the new route served by the router', async () =>
      (await viaRouter(freshHost)) === 200 ? true : undefined,
    );

    // The instances kept running: the same containers, never replaced.
    const steadyAfter = await viaSecond.listActualLRPs({ process_guid: 'steady' });
    assert.deepEqual(
      steadyAfter.map((a) => [a.instance_guid, a.state]).sort(),
      steady.map((a) => [a.instance_guid, 'RUNNING']).sort(),
    );
    const listed = await runBerth(['list', '--dir', join(cluster.root, 'f1'), '--format', 'json']);
    const pods = JSON.parse(listed.stdout) as { state: string; name?: string; app?: string }[];
    assert.ok(pods.filter((p) => p.state === 'running').length >= 3, listed.stdout);

    // No history item lost: every one recorded before the kill is still there, and the exit that
    // happened after the kill arrived through the other server.
    const after = await historyIds(history, steady);
    assert.deepEqual(
      before.filter((id) => !after.includes(id)),
      [],
      'items recorded before the kill are all still there',
    );
    const exited = await waitFor('the exit of blink recorded through the other server', async () => {
      const record = await history.getContainer(blink!.instance_guid);
      return record.history.find((h) => h.exit_code === 3);
    });
    assert.equal(exited.exit_code, 3);
    const freshHistory = await history.getContainer(fresh!.instance_guid);
    assert.ok(freshHistory.history.length > 0, 'the new container has history, posted to the other server');
  });
});
