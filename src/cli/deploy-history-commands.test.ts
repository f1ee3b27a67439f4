import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ActualLRP, BbsClient } from '../bbs/index.js';
import type { DeployRecord } from '../model/index.js';
import { type CliResult, runBerth } from '../testing/berth-cli.js';
import { TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 19, item 5 as a user sees it, on a real cell (runc): a secret given by file reaches the
 * container's env, changing it (or env) rolls the service, `berth rollback` brings v1 back, and no
 * command's output, API answer or the database file shows a secret value.
 */
const cluster = new TestCluster('berth-deploy-history-');
const secrets = { v1: 'v1-secret-5d0a7c31e2', v2: 'v2-secret-9b44f0e6aa' };
const outputs: string[] = [];
let serverUrl = '';
let bbs: BbsClient;

function yaml(mode: string, secretFile: string): string {
  return `system: conf
services:
  /db:
    image: bb:1
    command: ["/bin/busybox", "sh", "-c", "env > /tmp/env; exec /bin/busybox httpd -f -p 8080 -h /"]
    ports: [8080]
    monitor: {tcp: 8080}
    memory_mb: 16
    env: {MODE: ${mode}}
    secrets:
      DB_PASSWORD: {file: ${secretFile}}
`;
}

async function berth(...args: string[]): Promise<CliResult> {
  const r = await runBerth([...args, '--server', serverUrl]);
  outputs.push(`berth ${args.join(' ')} → ${r.code}\n${r.stdout}${r.stderr}`);
  return r;
}

async function deploy(version: 'v1' | 'v2', mode: string): Promise<void> {
  // The secret file sits beside the definition and is named relative to it.
  writeFileSync(join(cluster.root, `pw-${version}`), `${secrets[version]}\n`, { mode: 0o600 });
  const file = join(cluster.root, `conf-${version}.yaml`);
  writeFileSync(file, yaml(mode, `./pw-${version}`));
  const r = await berth('deploy', file, '--wait');
  assert.equal(r.code, 0, `deploy ${version}: ${r.stdout} ${r.stderr}`);
}

/** The env the running /db container started with, read from its own httpd. */
async function containerEnv(): Promise<{ guid: string; env: string }> {
  return waitFor(
    'one running /db instance of the newest version',
    async () => {
      const desired = (await bbs.listDesiredLRPs({ domain: 'system-conf' })).filter((d) =>
        d.process_guid.startsWith('conf.db.'),
      );
      if (desired.length !== 1) return undefined;
      const guid = desired[0]!.process_guid;
      const running = (await bbs.listActualLRPs({ process_guid: guid })).filter(
        (a: ActualLRP) => a.state === 'RUNNING' && !a.evacuating,
      );
      const a = running[0];
      const port = a?.ports.find((p) => p.container_port === 8080)?.host_port;
      if (!a || !port) return undefined;
      const res = await fetch(`http://${a.address}:${port}/tmp/env`).catch(() => undefined);
      return res?.ok ? { guid, env: await res.text() } : undefined;
    },
    120_000,
  );
}

before(async () => {
  serverUrl = await cluster.startServer('server', '1s');
  bbs = new BbsClient(serverUrl);
  await cluster.startCell('c1', 'z1', 63400, serverUrl);
  await waitFor('the cell', async () => ((await bbs.listCells()).length === 1 ? true : undefined));
});

after(() => cluster.cleanup());

describe('secrets, berth deploys and berth rollback on a real cell', { timeout: 600_000 }, () => {
  const guids: string[] = [];

  it('the container sees the secret from the file; v2 rolls it; rollback brings v1 back', async () => {
    await deploy('v1', 'one');
    const v1 = await containerEnv();
    assert.match(v1.env, new RegExp(`^DB_PASSWORD=${secrets.v1}$`, 'm'));
    assert.match(v1.env, /^MODE=one$/m);
    guids.push(v1.guid);

    await deploy('v2', 'two');
    const v2 = await containerEnv();
    assert.notEqual(v2.guid, v1.guid, 'a new DesiredLRP version');
    assert.match(v2.env, new RegExp(`^DB_PASSWORD=${secrets.v2}$`, 'm'));
    assert.match(v2.env, /^MODE=two$/m);

    const r = await berth('rollback', 'conf', '--wait');
    assert.equal(r.code, 0, `${r.stdout} ${r.stderr}`);
    const back = await containerEnv();
    assert.equal(back.guid, v1.guid, "v1's version runs again");
    assert.match(back.env, new RegExp(`^DB_PASSWORD=${secrets.v1}$`, 'm'), 'with the secret stored with v1');
    assert.match(back.env, /^MODE=one$/m);
  });

  it('berth deploys shows three entries with who, digest and outcome', async () => {
    const json = await berth('deploys', 'conf', '--format', 'json');
    assert.equal(json.code, 0, json.stderr);
    const list = JSON.parse(json.stdout) as DeployRecord[];
    assert.equal(list.length, 3);
    assert.deepEqual(
      list.map((d) => [d.kind, d.user, d.state]),
      Array.from({ length: 3 }, () => ['deploy', 'anonymous', 'succeeded']),
    );
    assert.equal(list[2]?.rollback_of, list[0]?.id);
    assert.equal(list[2]?.digest, list[0]?.digest);
    assert.notEqual(list[1]?.digest, list[0]?.digest);
    const table = await berth('deploys', 'conf');
    assert.equal(table.code, 0);
    const lines = table.stdout.trim().split('\n');
    assert.match(lines[0] ?? '', /^ID\s+ACTION\s+PATH\s+DIGEST\s+USER\s+CREATED\s+OUTCOME$/);
    assert.equal(lines.length, 4);
    assert.match(
      lines[3] ?? '',
      new RegExp(`rollback of ${list[0]?.id}\\s+/\\s+${list[0]?.digest?.slice(0, 12)}\\s+anonymous`),
    );
  });

  it('no command, no API answer and no database file shows a secret value', async () => {
    await berth('system', 'status', 'conf');
    await berth('system', 'status', 'conf', '--format', 'json');
    await berth('system', 'list');
    await berth('lrp', 'list');
    await berth('ps');
    for (const path of [
      '/v1/systems/conf',
      '/v1/systems/conf/deploys',
      '/v1/desired_lrps',
      '/v1/actual_lrps',
    ]) {
      const res = await fetch(`${serverUrl}${path}`);
      outputs.push(`GET ${path} → ${res.status}\n${await res.text()}`);
    }
    assert.ok(outputs.length >= 12);
    for (const out of outputs)
      for (const s of Object.values(secrets))
        assert.ok(!out.includes(s), `shows a secret: ${out.slice(0, 500)}`);
    const dbFiles = ['bbs.sqlite3', 'bbs.sqlite3-wal']
      .map((f) => join(cluster.root, 'server', f))
      .filter((f) => existsSync(f));
    const bytes = Buffer.concat(dbFiles.map((f) => readFileSync(f)));
    assert.ok(bytes.indexOf(Buffer.from('DB_PASSWORD')) !== -1, 'the name is there: the search works');
    for (const s of Object.values(secrets))
      assert.equal(bytes.indexOf(Buffer.from(s)), -1, 'a secret in clear');
  });
});
