import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ActualLRP, BbsClient, cellVolumeName } from '../bbs/index.js';
import { runBerth } from '../testing/berth-cli.js';
import { busyboxLrp, instanceText, TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 23 on real cells: an operator drains the cell holding an instance's named volume. The
 * instance cannot be handed over (its data is on that cell), so, as docs/bbs.md says, its
 * `/evacuating` copy keeps serving until the evacuation timeout while the instance waits with a
 * placement error saying why; then the cell exits (the drain ends), the instance waits for the gone
 * cell, and nothing starts it elsewhere on an empty volume. When the cell comes back, so does the
 * instance, with its data (as a pod bound to a local PersistentVolume returns to its node).
 */
const cluster = new TestCluster('berth-volume-drain-');
const portBases: Readonly<Record<string, number>> = { d1: 64900, d2: 65000 };
/** Long enough that the waiting instance is seen on a loaded machine before the drain ends. */
const evacuationTimeout = '45s';
let serverUrl = '';
let bbs: BbsClient;

function startCell(id: string): Promise<void> {
  return cluster.startCell(id, 'z1', portBases[id] ?? 0, serverUrl, [
    '--evacuation-timeout',
    evacuationTimeout,
  ]);
}

/** Every start appends to the named volume, and the instance serves it over HTTP. */
const keeper = busyboxLrp('keeper', {
  command: [
    '/bin/busybox',
    'sh',
    '-c',
    'echo run >> /data/runs; exec /bin/busybox httpd -f -p 8080 -h /data',
  ],
  ports: [8080],
  volumes: [{ name: 'data', kind: 'named', target: '/data' }],
});

async function copies(): Promise<{ instance?: ActualLRP; evacuating?: ActualLRP }> {
  const all = await bbs.listActualLRPs({ process_guid: 'keeper' });
  const instance = all.find((a) => !a.evacuating);
  const evacuating = all.find((a) => a.evacuating);
  return { ...(instance ? { instance } : {}), ...(evacuating ? { evacuating } : {}) };
}

before(async () => {
  serverUrl = await cluster.startServer('server', '1s');
  bbs = new BbsClient(serverUrl);
  await bbs.upsertDomain({ domain: 'tests', ttl_ms: 0 });
  await Promise.all([startCell('d1'), startCell('d2')]);
  await waitFor('two cells', async () => ((await bbs.listCells()).length === 2 ? true : undefined));
});

after(() => cluster.cleanup());

describe('draining the cell of a pinned instance (issue 23)', { timeout: 600_000 }, () => {
  it('the instance waits, saying why, the drain ends, nothing starts it elsewhere, and it returns with its cell', async () => {
    await bbs.desireLRP(keeper);
    const first = await waitFor(
      'keeper RUNNING',
      async () => {
        const { instance } = await copies();
        return instance?.state === 'RUNNING' ? instance : undefined;
      },
      120_000,
    );
    const home = first.cell_id;
    const other = home === 'd1' ? 'd2' : 'd1';
    assert.equal(await instanceText(first, '/runs'), 'run\n');
    assert.deepEqual(
      (await bbs.listVolumePins({ domain: 'tests' })).map((p) => [p.volume, p.index, p.cell_id]),
      [['data', 0, home]],
    );

    // Watch the whole drain: the instance is never claimed or run on the other cell (an empty
    // volume there), and never taken back by its draining cell (whose copy is under /evacuating).
    const elsewhere: ActualLRP[] = [];
    const takenBack: ActualLRP[] = [];
    let watching = true;
    let handedOver = false;
    const watcher = (async () => {
      while (watching) {
        const all = await bbs.listActualLRPs({ process_guid: 'keeper' });
        handedOver ||= all.some((a) => a.evacuating);
        for (const a of all) {
          if (a.cell_id === other) elsewhere.push(a);
          else if (handedOver && !a.evacuating && a.cell_id === home) takenBack.push(a);
        }
        await sleep(200);
      }
    })();

    const cellProcess = cluster.cells.get(home);
    const exited = new Promise<number | null>((resolve) => cellProcess?.once('exit', resolve));
    const drained = await runBerth(['cell', 'drain', home, '--server', serverUrl]);
    assert.equal(drained.code, 0, drained.stderr);
    assert.equal(drained.stdout, `${home} evacuating\n`);

    // While its cell drains: the old copy still serves from /evacuating, and the instance waits
    // with a placement error naming the cell and the operator's way out.
    const draining = await waitFor('keeper waiting for its evacuating cell', async () => {
      const { instance, evacuating } = await copies();
      return evacuating?.state === 'RUNNING' &&
        instance?.state === 'UNCLAIMED' &&
        instance.placement_error.includes('which is evacuating')
        ? { instance, evacuating }
        : undefined;
    });
    assert.equal(draining.evacuating.cell_id, home);
    assert.equal(
      draining.instance.placement_error,
      `pinned to cell ${home} by its named volumes, which is evacuating: it waits for that cell (or for an operator to release the pin: berth volume unpin)`,
    );
    assert.equal(await instanceText(draining.evacuating, '/runs'), 'run\n');

    // The drain ends at the evacuation timeout: the copy stops and the cell exits cleanly.
    assert.equal(
      await exited,
      0,
      `the drained cell exits cleanly: ${cluster.cellLogs.get(home)?.slice(-3000)}`,
    );
    const waiting = await waitFor(
      'keeper waiting for its gone cell',
      async () => {
        const { instance, evacuating } = await copies();
        return evacuating === undefined &&
          instance?.state === 'UNCLAIMED' &&
          instance.placement_error.includes('which is gone')
          ? instance
          : undefined;
      },
      60_000,
    );
    assert.match(
      waiting.placement_error,
      new RegExp(`^pinned to cell ${home} by its named volumes, which is gone`),
    );
    assert.equal(waiting.cell_id, '');
    assert.deepEqual(
      (await bbs.listCells()).map((c) => c.cell_id),
      [other],
    );
    // Its data stays on the drained cell, and so does its pin: only an operator moves it.
    const dataDir = join(cluster.root, home, 'volumes', cellVolumeName('tests', 'data', 0), '_data');
    assert.equal(readFileSync(join(dataDir, 'runs'), 'utf8'), 'run\n');
    assert.deepEqual(
      (await bbs.listVolumePins({ domain: 'tests' })).map((p) => p.cell_id),
      [home],
    );
    // A few auction and convergence rounds with an empty, live cell at hand: it still waits.
    await sleep(6_000);
    const still = await copies();
    assert.equal(still.instance?.state, 'UNCLAIMED');
    watching = false;
    await watcher;
    assert.deepEqual(elsewhere, [], `never claimed or run on ${other}`);
    assert.deepEqual(takenBack, [], `never claimed or run again by the draining ${home}`);
    assert.deepEqual(cluster.runcContainers(other), []);

    // The operator brings the cell back: the instance starts there again, on its data.
    await startCell(home);
    const back = await waitFor(
      `keeper RUNNING on ${home} again`,
      async () => {
        const { instance } = await copies();
        return instance?.state === 'RUNNING' ? instance : undefined;
      },
      120_000,
    );
    assert.equal(back.cell_id, home);
    assert.equal(
      await instanceText(back, '/runs'),
      'run\nrun\n',
      'the second run appended to the first run’s volume',
    );
    await bbs.removeDesiredLRP({ process_guid: 'keeper' });
  });
});
