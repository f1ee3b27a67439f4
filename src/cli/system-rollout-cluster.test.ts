import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BbsClient } from '../bbs/index.js';
import type { ActionRecord, SystemStatusJson } from '../model/index.js';
import { runBerth } from '../testing/berth-cli.js';
import { TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 19's "must show" on real cells: a server and three cell processes running runc
 * containers. A deploy lasts until its services run with monitors passing, holding its locks all
 * that time; a deploy of an image that does not exist fails within its timeout with that reason.
 */
const cluster = new TestCluster('berth-rollout-cluster-');
let serverUrl = '';
let bbs: BbsClient;

/** `/a/b` starts slowly: its monitor (tcp 8080) passes only once the shell has slept 8 s. */
const tree = `system: tree
services:
  /a/b:
    image: bb:1
    command: ["/bin/busybox", "sh", "-c", "sleep 8; exec /bin/busybox httpd -f -p 8080 -h /"]
    instances: 2
    ports: [8080]
    monitor: {tcp: 8080}
    memory_mb: 16
  /a/c:
    image: bb:1
    command: ["/bin/busybox", "httpd", "-f", "-p", "8081", "-h", "/"]
    ports: [8081]
    monitor: {tcp: 8081}
    memory_mb: 16
`;

const missingImage = `system: ghost
services:
  /x:
    image: no-such-image:1
    command: ["/bin/true"]
    memory_mb: 16
`;

/** Exits before its monitor ever passes: never RUNNING, it crashes again and again. */
const crashing = `system: crashy
services:
  /api:
    image: bb:1
    command: ["/bin/busybox", "sh", "-c", "sleep 1; exit 3"]
    ports: [8080]
    monitor: {tcp: 8080}
    memory_mb: 16
`;

function write(name: string, text: string): string {
  const file = join(cluster.root, name);
  writeFileSync(file, text);
  return file;
}

async function action(id: string): Promise<ActionRecord> {
  return (await (await fetch(`${serverUrl}/v1/deploys/${id}`)).json()) as ActionRecord;
}

before(async () => {
  serverUrl = await cluster.startServer('server', '1s');
  bbs = new BbsClient(serverUrl);
  await Promise.all([
    cluster.startCell('c1', 'z1', 64300, serverUrl),
    cluster.startCell('c2', 'z2', 64400, serverUrl),
    cluster.startCell('c3', 'z3', 64500, serverUrl),
  ]);
  await waitFor('three cells', async () => ((await bbs.listCells()).length === 3 ? true : undefined));
});

after(() => cluster.cleanup());

describe('deploy lifetime on three cells (issue 19)', { timeout: 600_000 }, () => {
  it('while /a/b rolls out, a deploy of /a and a teardown are refused at once naming it; after it succeeds both are accepted', async () => {
    const file = write('tree.yaml', tree);
    const started = await runBerth(['deploy', file, '--path', '/a/b', '--server', serverUrl]);
    assert.equal(started.code, 0, started.stderr);
    const holder = started.stdout.trim();

    const parent = await runBerth(['deploy', file, '--path', '/a', '--server', serverUrl]);
    assert.equal(parent.code, 4, `${parent.stdout} ${parent.stderr}`);
    assert.match(
      parent.stderr,
      new RegExp(`Cannot deploy /a in system "tree": deploy ${holder} of /a/b holds`),
    );
    const down = await runBerth(['teardown', 'tree', '--server', serverUrl]);
    assert.equal(down.code, 4, `${down.stdout} ${down.stderr}`);
    assert.match(
      down.stderr,
      new RegExp(`Cannot tear down in system "tree": deploy ${holder} of /a/b holds`),
    );
    // Both were refused while the deploy was still rolling out, not after it.
    assert.equal((await action(holder)).state, 'in_progress');
    const during = (await (await fetch(`${serverUrl}/v1/systems/tree`)).json()) as SystemStatusJson;
    assert.equal(during.state, 'pending');

    const waited = await runBerth(['deploy', file, '--path', '/a/b', '--wait', '--server', serverUrl]);
    assert.equal(waited.code, 4, 'a second deploy of /a/b is refused too');
    const ended = await waitFor(
      'the /a/b deploy to end',
      async () => {
        const a = await action(holder);
        return a.state === 'succeeded' || a.state === 'failed' ? a : undefined;
      },
      180_000,
    );
    assert.equal(ended.state, 'succeeded', JSON.stringify(ended));
    // Succeeded means: every instance of /a/b RUNNING (its monitor passed) at the new version.
    const running = (await bbs.listActualLRPs({ domain: 'system-tree' })).filter(
      (a) => a.process_guid.startsWith('tree.a.b.') && a.state === 'RUNNING' && !a.evacuating,
    );
    assert.equal(running.length, 2);

    const whole = await runBerth(['deploy', file, '--path', '/a', '--wait', '--server', serverUrl]);
    assert.equal(whole.code, 0, `${whole.stdout} ${whole.stderr}`);
    assert.match(whole.stdout, /deploy d-\S+ succeeded/);
    const st = (await (await fetch(`${serverUrl}/v1/systems/tree`)).json()) as SystemStatusJson;
    assert.equal(st.state, 'stable', JSON.stringify(st));
    const gone = await runBerth(['teardown', 'tree', '--wait', '--server', serverUrl]);
    assert.equal(gone.code, 0, `${gone.stdout} ${gone.stderr}`);
    assert.equal((await fetch(`${serverUrl}/v1/systems/tree`)).status, 404);
    assert.deepEqual(await bbs.listActualLRPs({ domain: 'system-tree' }), []);
  });

  it('a deploy of an image that does not exist fails within its timeout with that reason; the system shows failed with it', async (t) => {
    const file = write('ghost.yaml', missingImage);
    const r = await runBerth(['deploy', file, '--wait', '--timeout', '20s', '--server', serverUrl]);
    assert.equal(r.code, 1, `${r.stdout} ${r.stderr}`);
    t.diagnostic(r.stderr.trim());
    assert.match(
      r.stderr,
      /failed: not rolled out within 20s: \/x: instance 0 cannot be placed: .*no-such-image:1/,
    );
    const st = (await (await fetch(`${serverUrl}/v1/systems/ghost`)).json()) as SystemStatusJson;
    assert.equal(st.state, 'failed');
    assert.match(st.reason ?? '', /\/x: instance 0 cannot be placed: .*no-such-image:1/);
    // A failed system starts over when deployed again (failed → pending), and can be torn down.
    const down = await runBerth(['teardown', 'ghost', '--wait', '--server', serverUrl]);
    assert.equal(down.code, 0, `${down.stdout} ${down.stderr}`);
  });

  it('a crash-looping service fails its deploy within its timeout with its crash count and last exit; the system shows failed', async (t) => {
    const file = write('crashy.yaml', crashing);
    const r = await runBerth(['deploy', file, '--wait', '--timeout', '20s', '--server', serverUrl]);
    assert.equal(r.code, 1, `${r.stdout} ${r.stderr}`);
    t.diagnostic(r.stderr.trim());
    assert.match(
      r.stderr,
      /failed: not rolled out within 20s: \/api: crash loop: instance 0 crashed [1-9]\d* time\(s\), last: .+/,
    );
    const st = (await (await fetch(`${serverUrl}/v1/systems/crashy`)).json()) as SystemStatusJson;
    assert.equal(st.state, 'failed');
    const down = await runBerth(['teardown', 'crashy', '--wait', '--server', serverUrl]);
    assert.equal(down.code, 0, `${down.stdout} ${down.stderr}`);
  });
});
