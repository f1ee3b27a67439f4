import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { BbsClient } from '../bbs/index.js';
import { type ActionRecord, isLiveAction } from '../model/index.js';
import { runBerth } from '../testing/berth-cli.js';
import { type ServerProcess, startServerProcess } from '../testing/server-process.js';
import { waitUntil } from '../testing/simulated-cluster.js';
import { playCells, playSystem } from '../testing/system-cells.js';
import { parseEntityAddress } from './entity-commands.js';

const shop = `system: shop
services:
  /web:
    image: bb:1
    instances: 2
    relations: ["/db"]
  /db:
    image: bb:1
`;

describe('berth unit|service|relation|cell addresses (bad input first)', () => {
  it('reads SYSTEM/SERVICE/N with nested service paths, and refuses what is not one', () => {
    assert.deepEqual(parseEntityAddress('shop/web/api/2', true), {
      system: 'shop',
      path: '/web/api',
      index: 2,
    });
    assert.deepEqual(parseEntityAddress('shop/web', false), { system: 'shop', path: '/web', index: 0 });
    for (const bad of ['shop', 'shop/web', 'shop//2', '/web/2', 'shop/web/x'])
      assert.throws(() => parseEntityAddress(bad, true), /expected SYSTEM\/SERVICE\/N/, bad);
    assert.throws(() => parseEntityAddress('shop', false), /expected SYSTEM\/SERVICE/);
  });
});

describe('per-entity commands against a real berth server (SQLite)', () => {
  const dirs: string[] = [];
  const servers: ServerProcess[] = [];
  const stops: (() => void)[] = [];
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), 'berth-entity-cli-'));
    dirs.push(d);
    return d;
  };
  after(async () => {
    for (const stop of stops) stop();
    for (const s of servers)
      if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const start = async (dir: string) => {
    const s = await startServerProcess(['server', '--listen', '127.0.0.1:0', '--auth', 'none', '--dir', dir]);
    servers.push(s);
    return s;
  };
  const action = async (url: string, id: string) =>
    (await (await fetch(`${url}/v1/deploys/${id}`)).json()) as ActionRecord;

  it('each command is one action: printed (id, table, json), followed with --wait, bad addresses refused', {
    timeout: 120_000,
  }, async () => {
    const dir = tmp();
    const s = await start(dir);
    const at = ['--server', s.url];
    // The cells' side, through the server's BBS API: deploys last until the system has rolled out.
    const stopPlaying = playSystem(new BbsClient(s.url), 'shop', undefined, 100);
    stops.push(stopPlaying);
    writeFileSync(join(dir, 'shop.yaml'), shop);
    const deployed = await runBerth(['deploy', join(dir, 'shop.yaml'), '--wait', ...at]);
    assert.equal(deployed.code, 0, deployed.stderr);

    const noIndex = await runBerth(['unit', 'destroy', 'shop/web', ...at]);
    assert.notEqual(noIndex.code, 0);
    assert.match(noIndex.stderr, /expected SYSTEM\/SERVICE\/N/);
    const gone = await runBerth(['cell', 'destroy', 'nope', ...at]);
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /cell/);

    const scaled = await runBerth(['service', 'scale', 'shop/web', '3', '--wait', '--format', 'json', ...at]);
    assert.equal(scaled.code, 0, scaled.stderr);
    const record = JSON.parse(scaled.stdout.slice(0, scaled.stdout.lastIndexOf('}') + 1)) as ActionRecord;
    assert.deepEqual([record.kind, record.system, record.path], ['service-scale', 'shop', '/web']);
    assert.match(scaled.stdout, /service-scale \S+ succeeded/);

    const destroyed = await runBerth(['unit', 'destroy', 'shop/web/2', '--wait', ...at]);
    assert.equal(destroyed.code, 0, destroyed.stderr);
    const removed = await runBerth(['relation', 'remove', 'shop', '/web', '/db', '--wait', ...at]);
    assert.equal(removed.code, 0, removed.stderr);
    const added = await runBerth([
      'relation',
      'add',
      'shop',
      'web',
      'db',
      '--wait',
      '--format',
      'table',
      ...at,
    ]);
    assert.equal(added.code, 0, added.stderr);
    assert.match(
      added.stdout,
      /^ACTION\s+KIND\s+SYSTEM\s+TARGET\s+STATE\n\S+\s+relation-add\s+shop\s+\/web \/db\s+(accepted|in_progress)/,
    );
    // The destroyed unit's replacement comes from the system agent's next pass, not from the
    // destroy action (as a ReplicaSet replaces a deleted pod): wait for it rather than race it.
    const webUnits = async () => {
      const status = await runBerth(['system', 'status', 'shop', '--format', 'json', ...at]);
      assert.equal(status.code, 0, status.stderr);
      const services = (JSON.parse(status.stdout) as { services: { path: string; units: unknown[] }[] })
        .services;
      return services.find((x) => x.path === '/web')?.units.length;
    };
    await waitUntil('unit 2 replaced: the service runs 3', async () => (await webUnits()) === 3, 60_000);

    const down = await runBerth(['teardown', 'shop', '--force', '--wait', ...at]);
    assert.equal(down.code, 0, down.stderr);
    stopPlaying();
  });

  it('kill -9 of the server while a unit destroy waits for a dead agent, restart: the action resumes and ends, no lock leaked', {
    timeout: 120_000,
  }, async () => {
    const dir = tmp();
    let s = await start(dir);
    writeFileSync(join(dir, 'shop.yaml'), shop);
    const stopPlaying = playSystem(new BbsClient(s.url), 'shop', undefined, 100);
    stops.push(stopPlaying);
    const deployed = await runBerth(['deploy', join(dir, 'shop.yaml'), '--wait', '--server', s.url]);
    stopPlaying();
    assert.equal(deployed.code, 0, deployed.stderr);
    // This process plays the cells through the server's BBS API, as cells do: cell-0 says it runs
    // its own agents (so the server leaves its units to it) but they never act, and its presence
    // lapses once we stop.
    const store = new BbsClient(s.url);
    const heartbeat = () =>
      store.heartbeatCell({
        presence: {
          cell_id: 'cell-0',
          zone: 'z1',
          capacity: { memory_mb: 4096, disk_mb: 4096, containers: 10 },
          rep_url: 'http://127.0.0.1:1',
          placement_tags: [],
          model_agent: true,
        },
        ttl_ms: 8_000,
      });
    await heartbeat();
    const beating = setInterval(() => void heartbeat().catch(() => {}), 500);
    // The model's view of cell-0 (what its agents would act on): a /web unit assigned there by
    // the system agent, not just an instance running there (the status shows that too).
    const unitOnCell0 = async () => {
      for (;;) {
        await playCells(store, 'system-shop').catch(() => {});
        const model = (await (await fetch(`${s.url}/v1/agents/cells/cell-0/model`)).json()) as {
          units: { service: string; index: number; cell_id: string | null }[];
        };
        const unit = model.units.find((u) => u.service === 'shop:/web' && u.cell_id === 'cell-0');
        if (unit) return unit.index;
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    const index = await unitOnCell0();
    // Fresh for the next 8 s whatever the load: the server must see cell-0's agent as alive.
    await heartbeat();
    const accepted = await runBerth(['unit', 'destroy', `shop/web/${index}`, '--server', s.url]);
    assert.equal(accepted.code, 0, accepted.stderr);
    const id = accepted.stdout.trim();
    // It waits for cell-0's agent, which never comes.
    await new Promise((r) => setTimeout(r, 1_500));
    const waiting = await action(s.url, id);
    assert.ok(isLiveAction(waiting.state), JSON.stringify(waiting));
    s.child.kill('SIGKILL');
    await s.exited;
    clearInterval(beating);
    s = await start(dir);
    let ended = await action(s.url, id);
    const deadline = Date.now() + 60_000;
    while (isLiveAction(ended.state) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      ended = await action(s.url, id);
    }
    assert.equal(ended.state, 'succeeded', JSON.stringify(ended));
    assert.notEqual(ended.owner, waiting.owner, 'taken over by the restarted server');
    assert.ok(
      ended.log.some((l) => /removed; its instance is replaced/.test(l)),
      ended.log.join('\n'),
    );
    // The real history of the unit's container names who asked (no token here: anonymous).
    const st = (await (await fetch(`${s.url}/v1/systems/shop`)).json()) as {
      services: { path: string; process_guid: string }[];
    };
    const guid = st.services.find((x) => x.path === '/web')?.process_guid ?? '';
    const container = (await (await fetch(`${s.url}/v1/containers/ig-${guid}-${index}`)).json()) as {
      history: { status: string; entity_type: string; entity_id: string | null; message: string | null }[];
    };
    assert.ok(
      container.history.some(
        (i) => i.entity_type === 'user' && i.status === 'destroy' && i.entity_id === 'anonymous',
      ),
      JSON.stringify(container),
    );
    const again = await runBerth(['deploy', join(dir, 'shop.yaml'), '--path', '/web', '--server', s.url]);
    assert.equal(again.code, 0, `the lock on /web was released: ${again.stderr}`);
  });
});
