import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ActualLRP, BbsEvent, CellPresence, DesiredLRP, HttpRoute } from '../bbs/index.js';
import { RouteTable } from './route-table.js';

const t0 = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

function desired(guid: string, routes: HttpRoute[], ports = [8080]): DesiredLRP {
  return {
    process_guid: guid,
    domain: 'd',
    instances: 3,
    image: 'bb:1',
    env: {},
    memory_mb: 16,
    disk_mb: 0,
    ports,
    routes: { http: routes },
    annotation: '',
    start_timeout_s: 60,
    placement_tags: [],
    created_at: iso(t0),
    modification_tag: { epoch: `e-${guid}`, index: 0 },
  };
}

function actual(guid: string, index: number, extra: Partial<ActualLRP> = {}): ActualLRP {
  return {
    process_guid: guid,
    index,
    domain: 'd',
    instance_guid: `ig-${guid}-${index}`,
    cell_id: `cell-${index}`,
    state: 'RUNNING',
    crash_count: 0,
    last_crashed_at: null,
    crash_reason: '',
    since: iso(t0),
    placement_error: '',
    address: '10.0.0.1',
    ports: [{ container_port: 8080, host_port: 61000 + index }],
    evacuating: false,
    modification_tag: { epoch: `a-${guid}-${index}`, index: 1 },
    ...extra,
  };
}

function cell(id: string, expiresMs = t0 + 30_000): CellPresence {
  return {
    cell_id: id,
    zone: 'z1',
    capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
    rep_url: 'http://127.0.0.1:1',
    placement_tags: [],
    expires_at: iso(expiresMs),
  };
}

let seq = 0;
const ev = (body: Record<string, unknown>): BbsEvent =>
  ({ id: `1-${++seq}`, created_at: iso(t0), ...body }) as unknown as BbsEvent;

const web = { hostname: 'web.test.berth.localhost', port: 8080 };
const cells = [cell('cell-0'), cell('cell-1'), cell('cell-2')];

function tableWith(...actuals: ActualLRP[]): RouteTable {
  const table = new RouteTable();
  table.reset({ desired_lrps: [desired('web', [web])], actual_lrps: actuals, cells }, t0);
  return table;
}
const ports = (table: RouteTable, host = web.hostname, path = '/') =>
  table.lookup(host, path)?.endpoints.map((e) => e.port);

describe('RouteTable (the route emitter as a planner: BBS events in, table out)', () => {
  it('a snapshot: RUNNING instances with a host port for the route are routable, others not', () => {
    const table = tableWith(
      actual('web', 0),
      actual('web', 1, { state: 'CLAIMED', address: '', ports: [] }),
      actual('web', 2),
      actual('web', 3, { state: 'UNCLAIMED', cell_id: '', address: '', ports: [] }),
    );
    assert.deepEqual(ports(table), [61000, 61002]);
    assert.equal(table.lookup(web.hostname, '/')?.route, 'web.test.berth.localhost');
    assert.equal(table.lookup('other.test.berth.localhost', '/'), undefined);
  });

  it('actual_lrp_changed to RUNNING adds the instance; to CRASHED or UNCLAIMED takes it out', () => {
    const claimed = actual('web', 1, { state: 'CLAIMED', address: '', ports: [] });
    const table = tableWith(actual('web', 0), claimed);
    table.apply(ev({ type: 'actual_lrp_changed', before: claimed, after: actual('web', 1) }));
    assert.deepEqual(ports(table), [61000, 61001]);
    table.apply(
      ev({
        type: 'actual_lrp_changed',
        before: actual('web', 1),
        after: actual('web', 1, { state: 'CRASHED' }),
      }),
    );
    assert.deepEqual(ports(table), [61000]);
    table.apply(
      ev({
        type: 'actual_lrp_changed',
        before: actual('web', 0),
        after: actual('web', 0, { state: 'UNCLAIMED', cell_id: '', address: '', ports: [] }),
      }),
    );
    assert.deepEqual(ports(table), [], 'the route stays (503), its pool is empty');
    assert.equal(table.lookup(web.hostname, '/')?.route, web.hostname);
  });

  it('actual_lrp_created and actual_lrp_removed (a scale down, an instance retired)', () => {
    const table = tableWith();
    table.apply(ev({ type: 'actual_lrp_created', actual_lrp: actual('web', 2) }));
    assert.deepEqual(ports(table), [61002]);
    table.apply(ev({ type: 'actual_lrp_removed', actual_lrp: actual('web', 2) }));
    assert.deepEqual(ports(table), []);
  });

  it('an instance whose route port has no host port mapping is not routable', () => {
    const table = tableWith(actual('web', 0, { ports: [{ container_port: 9090, host_port: 61009 }] }));
    assert.deepEqual(ports(table), []);
  });

  it('evacuation: the evacuating copy serves until it is removed, beside its replacement', () => {
    const table = tableWith(actual('web', 0));
    const evacuating = actual('web', 0, { evacuating: true });
    const moved = actual('web', 0, { state: 'UNCLAIMED', cell_id: '', address: '', ports: [] });
    table.apply(ev({ type: 'actual_lrp_created', actual_lrp: evacuating }));
    table.apply(ev({ type: 'actual_lrp_changed', before: actual('web', 0), after: moved }));
    assert.deepEqual(ports(table), [61000]);
    const replacement = actual('web', 0, { cell_id: 'cell-1', instance_guid: 'new', address: '10.0.0.2' });
    table.apply(ev({ type: 'actual_lrp_changed', before: moved, after: replacement }));
    assert.equal(table.lookup(web.hostname, '/')?.endpoints.length, 2);
    table.apply(ev({ type: 'actual_lrp_removed', actual_lrp: evacuating }));
    assert.deepEqual(
      table.lookup(web.hostname, '/')?.endpoints.map((e) => e.address),
      ['10.0.0.2'],
    );
  });

  it('a cell that disappears or whose presence expires takes its instances out; they return if it heartbeats', () => {
    const table = tableWith(actual('web', 0), actual('web', 1));
    table.setCells([cell('cell-1')], t0 + 1000);
    assert.deepEqual(ports(table), [61001]);
    table.setCells([cell('cell-0', t0 + 5000), cell('cell-1', t0 + 60_000)], t0 + 2000);
    assert.deepEqual(ports(table), [61000, 61001]);
    table.setCells([cell('cell-0', t0 + 5000), cell('cell-1', t0 + 60_000)], t0 + 6000);
    assert.deepEqual(ports(table), [61001], 'expired at 5 s');
  });

  it('cells that appear, change or disappear as events move their instances at once; the feed reads again at the first expiry', () => {
    const table = tableWith(actual('web', 0), actual('web', 1));
    table.setCells([cell('cell-1', t0 + 30_000)], t0 + 1000);
    assert.deepEqual(ports(table), [61001]);
    assert.equal(table.nextCellCheckAt(), t0 + 30_000);
    table.apply(ev({ type: 'cell_appeared', cell: cell('cell-0', t0 + 20_000) }));
    assert.deepEqual(ports(table), [61000, 61001], 'no read of the cells needed');
    assert.equal(table.nextCellCheckAt(), t0 + 20_000);
    table.apply(
      ev({ type: 'cell_changed', before: cell('cell-0', t0 + 20_000), after: cell('cell-0', t0 + 40_000) }),
    );
    assert.equal(table.nextCellCheckAt(), t0 + 30_000);
    table.apply(ev({ type: 'cell_disappeared', cell_id: 'cell-1', reason: 'removed' }));
    assert.deepEqual(ports(table), [61000]);
    assert.equal(table.nextCellCheckAt(), t0 + 40_000);
    table.apply(ev({ type: 'cell_disappeared', cell_id: 'cell-0', reason: 'expired' }));
    assert.deepEqual(ports(table), []);
    assert.equal(table.nextCellCheckAt(), undefined);
  });

  it('an instance that moved to another cell goes and comes with that cell, not its old one', () => {
    const table = tableWith(actual('web', 0), actual('web', 1));
    table.setCells([cell('cell-0'), cell('cell-1')], t0 + 1000);
    // Instance 0 is placed again on cell-1 (lost, unclaimed, claimed and started there).
    const moved = actual('web', 0, {
      cell_id: 'cell-1',
      instance_guid: 'ig-moved',
      ports: [{ container_port: 8080, host_port: 62000 }],
    });
    table.apply(ev({ type: 'actual_lrp_changed', before: actual('web', 0), after: moved }));
    assert.deepEqual(ports(table), [62000, 61001]);
    table.apply(ev({ type: 'cell_disappeared', cell_id: 'cell-0', reason: 'expired' }));
    assert.deepEqual(ports(table), [62000, 61001], 'cell-0 held nothing any more');
    table.apply(ev({ type: 'cell_disappeared', cell_id: 'cell-1', reason: 'expired' }));
    assert.deepEqual(ports(table), [], 'both instances were on cell-1');
    table.apply(ev({ type: 'cell_appeared', cell: cell('cell-1') }));
    assert.deepEqual(ports(table), [62000, 61001]);
    table.apply(ev({ type: 'actual_lrp_removed', actual_lrp: moved }));
    table.apply(ev({ type: 'cell_disappeared', cell_id: 'cell-1', reason: 'expired' }));
    table.apply(ev({ type: 'cell_appeared', cell: cell('cell-1') }));
    assert.deepEqual(ports(table), [61001], 'a removed instance does not come back with its cell');
  });

  it('desired_lrp_changed: new routes take the instances, dropped ones go (404)', () => {
    const table = tableWith(actual('web', 0));
    const api = { hostname: 'api.test.berth.localhost', port: 8080 };
    table.apply(
      ev({ type: 'desired_lrp_changed', before: desired('web', [web]), after: desired('web', [api]) }),
    );
    assert.equal(table.lookup(web.hostname, '/'), undefined);
    assert.deepEqual(ports(table, api.hostname), [61000]);
    table.apply(ev({ type: 'desired_lrp_removed', desired_lrp: desired('web', [api]) }));
    assert.equal(table.lookup(api.hostname, '/'), undefined);
    assert.deepEqual(table.routes(), []);
  });

  it('desired_lrp_created then instances: scale to 0 keeps the route with no instance (503)', () => {
    const table = new RouteTable();
    table.reset({ desired_lrps: [], actual_lrps: [], cells }, t0);
    table.apply(ev({ type: 'desired_lrp_created', desired_lrp: desired('web', [web]) }));
    assert.deepEqual(ports(table), []);
    table.apply(ev({ type: 'actual_lrp_created', actual_lrp: actual('web', 0) }));
    assert.deepEqual(ports(table), [61000]);
  });

  it('a route shared by two LRPs pools the instances of both', () => {
    const table = new RouteTable();
    table.reset(
      {
        desired_lrps: [desired('blue', [web]), desired('green', [web])],
        actual_lrps: [actual('blue', 0), actual('green', 1)],
        cells,
      },
      t0,
    );
    assert.deepEqual(
      table.lookup(web.hostname, '/')?.endpoints.map((e) => e.processGuid),
      ['blue', 'green'],
    );
    table.apply(ev({ type: 'desired_lrp_removed', desired_lrp: desired('blue', [web]) }));
    assert.deepEqual(
      table.lookup(web.hostname, '/')?.endpoints.map((e) => e.processGuid),
      ['green'],
    );
  });

  it('wildcards match any subdomain, the nearest wins; an exact hostname beats a wildcard', () => {
    const table = new RouteTable();
    table.reset(
      {
        desired_lrps: [
          desired('any', [{ hostname: '*.shop.berth.localhost', port: 8080 }]),
          desired('deep', [{ hostname: '*.eu.shop.berth.localhost', port: 8080 }]),
          desired('api', [{ hostname: 'api.shop.berth.localhost', port: 8080 }]),
        ],
        actual_lrps: [actual('any', 0), actual('deep', 1), actual('api', 2)],
        cells,
      },
      t0,
    );
    const guidOf = (host: string) => table.lookup(host, '/')?.endpoints[0]?.processGuid;
    assert.equal(guidOf('x.shop.berth.localhost'), 'any');
    assert.equal(guidOf('a.b.shop.berth.localhost'), 'any');
    assert.equal(guidOf('x.eu.shop.berth.localhost'), 'deep');
    assert.equal(guidOf('api.shop.berth.localhost'), 'api');
    assert.equal(guidOf('shop.berth.localhost'), undefined);
  });

  it('path prefixes: the longest matching prefix wins, on whole segments', () => {
    const table = new RouteTable();
    table.reset(
      {
        desired_lrps: [
          desired('site', [web]),
          desired('api', [{ ...web, path: '/api' }]),
          desired('v2', [{ ...web, path: '/api/v2' }]),
        ],
        actual_lrps: [actual('site', 0), actual('api', 1), actual('v2', 2)],
        cells,
      },
      t0,
    );
    const guidOf = (path: string) => table.lookup(web.hostname, path)?.endpoints[0]?.processGuid;
    assert.equal(guidOf('/'), 'site');
    assert.equal(guidOf('/api'), 'api');
    assert.equal(guidOf('/api/users'), 'api');
    assert.equal(guidOf('/apix'), 'site');
    assert.equal(guidOf('/api/v2/x'), 'v2');
  });

  it('routes stored before they meant anything (other keys, malformed entries) are skipped', () => {
    const table = new RouteTable();
    const old = {
      ...desired('old', []),
      routes: { 'cf-router': [{ hostname: 'x', port: 1 }], http: 'nope' },
    };
    table.reset({ desired_lrps: [old], actual_lrps: [actual('old', 0)], cells }, t0);
    assert.deepEqual(table.routes(), []);
  });

  it('task events change nothing', () => {
    const table = tableWith(actual('web', 0));
    table.apply(ev({ type: 'task_created', task: {} }));
    assert.deepEqual(ports(table), [61000]);
  });
});
