import {
  type ActualLRP,
  type BbsEvent,
  type CellPresence,
  type DesiredLRP,
  type HttpRoute,
  httpRoutesOf,
} from '../bbs/index.js';

/** One instance behind a route: the host address and port its container port is mapped to. */
export interface Endpoint {
  /** `instance_guid:container_port`: the same instance keeps it while it runs. */
  readonly id: string;
  readonly processGuid: string;
  readonly index: number;
  readonly address: string;
  readonly port: number;
}

/**
 * A route as the router serves it: hostname and path prefix, and every routable instance of every
 * LRP that names it (duplicate routes are shared: the pool holds instances of all of them).
 */
export interface RoutePool {
  /** `hostname` + `path`, the name in 503 bodies and in metrics. */
  readonly route: string;
  readonly hostname: string;
  /** "" for every path. */
  readonly path: string;
  readonly endpoints: readonly Endpoint[];
}

/** What the table is rebuilt from: the BBS's snapshot (readSnapshot) or the same fields. */
export interface RouteSnapshot {
  readonly desired_lrps: readonly DesiredLRP[];
  readonly actual_lrps: readonly ActualLRP[];
  readonly cells: readonly CellPresence[];
}

const actualKey = (a: Pick<ActualLRP, 'process_guid' | 'index' | 'evacuating'>) =>
  `${a.process_guid}\0${a.index}\0${a.evacuating ? 1 : 0}`;
const routeName = (r: HttpRoute) => `${r.hostname}${r.path ?? ''}`;

/**
 * The route table (Diego's route emitter and gorouter's registry in one), as a planner: BBS events
 * and cell presences in, the table out, no I/O and no clock of its own (cell expiry is judged at
 * the `nowMs` given). An instance is routable only while RUNNING (in berth the rep CASes RUNNING
 * once the monitor passed), with an address and a host port for the route's container port, on a
 * cell whose presence has not expired. An evacuating copy stays routable until the BBS removes it,
 * as in Diego: it serves until its replacement runs. Each change recomputes only the LRP it
 * touches, so route churn costs per change, not per table.
 */
export class RouteTable {
  readonly #desired = new Map<string, readonly HttpRoute[]>();
  readonly #actuals = new Map<string, ActualLRP>();
  readonly #actualsByGuid = new Map<string, Set<string>>();
  /** cell id → the keys of the actuals on it, so a cell that comes or goes touches only its own. */
  readonly #actualsByCell = new Map<string, Set<string>>();
  /** cell id → expires_at in ms; undefined until a cell list was given (then every cell counts). */
  #cells: Map<string, number> | undefined;
  #nowMs = 0;
  /** route name → process guid → its endpoints on that route. */
  readonly #members = new Map<string, Map<string, Endpoint[]>>();
  readonly #routesOfGuid = new Map<string, string[]>();
  readonly #pools = new Map<string, RoutePool>();
  /** hostname → its routes' names, longest path first. */
  readonly #byHost = new Map<string, { path: string; route: string }[]>();
  #version = 0;

  /** Rebuilds everything from a snapshot (the first sync, and every resync). */
  reset(snapshot: RouteSnapshot, nowMs: number): void {
    this.#desired.clear();
    this.#actuals.clear();
    this.#actualsByGuid.clear();
    this.#actualsByCell.clear();
    this.#members.clear();
    this.#routesOfGuid.clear();
    this.#pools.clear();
    this.#byHost.clear();
    this.#nowMs = nowMs;
    this.#cells = cellExpiries(snapshot.cells);
    for (const d of snapshot.desired_lrps) this.#desired.set(d.process_guid, httpRoutesOf(d.routes));
    for (const a of snapshot.actual_lrps) this.#putActual(a);
    for (const guid of this.#desired.keys()) this.#recompute(guid);
  }

  /** Applies one BBS event; tasks and unrouted LRPs change nothing. */
  apply(event: BbsEvent): void {
    switch (event.type) {
      case 'desired_lrp_created':
        this.#desired.set(event.desired_lrp.process_guid, httpRoutesOf(event.desired_lrp.routes));
        this.#recompute(event.desired_lrp.process_guid);
        return;
      case 'desired_lrp_changed':
        this.#desired.set(event.after.process_guid, httpRoutesOf(event.after.routes));
        this.#recompute(event.after.process_guid);
        return;
      case 'desired_lrp_removed':
        this.#desired.delete(event.desired_lrp.process_guid);
        this.#recompute(event.desired_lrp.process_guid);
        return;
      case 'actual_lrp_created':
        this.#putActual(event.actual_lrp);
        this.#recompute(event.actual_lrp.process_guid);
        return;
      case 'actual_lrp_changed':
        // The evacuating copy is a separate record: a change never moves between the two.
        this.#putActual(event.after);
        this.#recompute(event.after.process_guid);
        return;
      case 'actual_lrp_removed':
        this.#removeActual(event.actual_lrp);
        this.#recompute(event.actual_lrp.process_guid);
        return;
      // A presence that begins, changes or ends is an event; one that is only extended is not, so
      // the feed still reads the cells before the first known expiry (`nextCellCheckAt`).
      case 'cell_appeared':
        this.#updateCells((cells) => cells.set(event.cell.cell_id, Date.parse(event.cell.expires_at)));
        return;
      case 'cell_changed':
        this.#updateCells((cells) => cells.set(event.after.cell_id, Date.parse(event.after.expires_at)));
        return;
      case 'cell_disappeared':
        this.#updateCells((cells) => cells.delete(event.cell_id));
        return;
      default:
        return;
    }
  }

  /**
   * The cells alive at `nowMs` (their presences, as listCells gives them): instances on a cell that
   * is gone or expired leave the table, and come back if it heartbeats again.
   */
  setCells(cells: readonly CellPresence[], nowMs: number): void {
    this.#setCells(cellExpiries(cells), nowMs);
  }

  /**
   * When the feed must read the cells again: the first known expiry, since a heartbeat that
   * extends a presence writes no event (undefined: no cell known; read at the feed's own pace).
   */
  nextCellCheckAt(): number | undefined {
    if (this.#cells === undefined || this.#cells.size === 0) return undefined;
    let first = Number.POSITIVE_INFINITY;
    for (const expiresAt of this.#cells.values())
      if (expiresAt > this.#nowMs) first = Math.min(first, expiresAt);
    return Number.isFinite(first) ? first : undefined;
  }

  /** A change of one presence from the event stream, judged at the time of the last read. */
  #updateCells(change: (cells: Map<string, number>) => void): void {
    const next = new Map(this.#cells ?? []);
    change(next);
    this.#setCells(next, this.#nowMs);
  }

  #setCells(next: Map<string, number>, nowMs: number): void {
    const before = this.#cells;
    this.#cells = next;
    const wasLive = (cell: string, at: number) => before === undefined || (before.get(cell) ?? 0) > at;
    // Per cell, not per instance: at 100,000 instances a look at every one for each cell event
    // held the server's event loop for 1.8 s when 50 cells went (docs/performance.md, round 17).
    const changed = new Set<string>();
    for (const [cell, keys] of this.#actualsByCell) {
      if (wasLive(cell, this.#nowMs) === this.#cellLive(cell, nowMs)) continue;
      for (const key of keys) {
        const a = this.#actuals.get(key);
        if (a) changed.add(a.process_guid);
      }
    }
    this.#nowMs = nowMs;
    for (const guid of changed) this.#recompute(guid);
  }

  /**
   * The route for a request: the host's route with the longest path prefix that matches, else
   * the same on `*.` + each parent domain (the nearest wildcard wins). `path` is without the
   * query. Undefined: no such route.
   */
  lookup(host: string, path: string): RoutePool | undefined {
    let name = host;
    for (;;) {
      const found = this.#matchPath(name, path);
      if (found) return found;
      const dot = name.indexOf('.', name.startsWith('*.') ? 2 : 0);
      if (dot === -1) return undefined;
      name = `*.${name.slice(dot + 1)}`;
    }
  }

  /** Counts changes of the pools, so a reader can tell whether anything changed since it looked. */
  get version(): number {
    return this.#version;
  }

  /** `address:port` of every routable instance. */
  liveTargets(): Set<string> {
    const out = new Set<string>();
    for (const pool of this.#pools.values())
      for (const e of pool.endpoints) out.add(`${e.address}:${e.port}`);
    return out;
  }

  /** Every route, sorted by name (for status pages and tests). */
  routes(): RoutePool[] {
    return [...this.#pools.values()].sort((a, b) => a.route.localeCompare(b.route));
  }

  #matchPath(hostname: string, path: string): RoutePool | undefined {
    const candidates = this.#byHost.get(hostname);
    if (!candidates) return undefined;
    for (const c of candidates) {
      if (c.path === '' || path === c.path || path.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`))
        return this.#pools.get(c.route);
    }
    return undefined;
  }

  #cellLive(cellId: string, nowMs: number): boolean {
    if (this.#cells === undefined) return true;
    return (this.#cells.get(cellId) ?? 0) > nowMs;
  }

  #putActual(a: ActualLRP): void {
    const key = actualKey(a);
    const previous = this.#actuals.get(key);
    if (previous && previous.cell_id !== a.cell_id) removeKey(this.#actualsByCell, previous.cell_id, key);
    if (a.cell_id !== '') addKey(this.#actualsByCell, a.cell_id, key);
    this.#actuals.set(key, a);
    addKey(this.#actualsByGuid, a.process_guid, key);
  }

  #removeActual(a: ActualLRP): void {
    const key = actualKey(a);
    const previous = this.#actuals.get(key);
    if (previous) removeKey(this.#actualsByCell, previous.cell_id, key);
    this.#actuals.delete(key);
    removeKey(this.#actualsByGuid, a.process_guid, key);
  }

  /** Takes `guid` off every route it was on and puts it on its current ones. */
  #recompute(guid: string): void {
    const touched = new Set(this.#routesOfGuid.get(guid) ?? []);
    for (const name of touched) this.#members.get(name)?.delete(guid);
    const routes = this.#desired.get(guid) ?? [];
    const names: string[] = [];
    for (const route of routes) {
      const name = routeName(route);
      names.push(name);
      touched.add(name);
      let members = this.#members.get(name);
      if (!members) {
        members = new Map();
        this.#members.set(name, members);
      }
      const endpoints = [...(members.get(guid) ?? []), ...this.#endpointsOf(guid, route.port)];
      members.set(guid, endpoints);
    }
    if (names.length > 0) this.#routesOfGuid.set(guid, names);
    else this.#routesOfGuid.delete(guid);
    for (const name of touched) this.#rebuildPool(name, routes);
  }

  #endpointsOf(guid: string, containerPort: number): Endpoint[] {
    const out: Endpoint[] = [];
    for (const key of this.#actualsByGuid.get(guid) ?? []) {
      const a = this.#actuals.get(key);
      if (a?.state !== 'RUNNING' || a.address === '' || !this.#cellLive(a.cell_id, this.#nowMs)) continue;
      const mapping = a.ports.find((p) => p.container_port === containerPort);
      if (!mapping) continue;
      out.push({
        id: `${a.instance_guid}:${containerPort}`,
        processGuid: a.process_guid,
        index: a.index,
        address: a.address,
        port: mapping.host_port,
      });
    }
    return out.sort((x, y) => x.index - y.index || x.id.localeCompare(y.id));
  }

  #rebuildPool(name: string, hint: readonly HttpRoute[]): void {
    this.#version += 1;
    const members = this.#members.get(name);
    const previous = this.#pools.get(name);
    if (!members || members.size === 0) {
      this.#members.delete(name);
      if (previous) {
        this.#pools.delete(name);
        this.#unindex(previous);
      }
      return;
    }
    const route = previous ?? fromHint(name, hint);
    if (!route) return;
    const endpoints = [...members.values()].flat();
    const pool: RoutePool = { route: name, hostname: route.hostname, path: route.path, endpoints };
    this.#pools.set(name, pool);
    if (!previous) this.#index(pool);
  }

  #index(pool: RoutePool): void {
    const list = this.#byHost.get(pool.hostname) ?? [];
    list.push({ path: pool.path, route: pool.route });
    list.sort((a, b) => b.path.length - a.path.length);
    this.#byHost.set(pool.hostname, list);
  }

  #unindex(pool: RoutePool): void {
    const list = (this.#byHost.get(pool.hostname) ?? []).filter((c) => c.route !== pool.route);
    if (list.length > 0) this.#byHost.set(pool.hostname, list);
    else this.#byHost.delete(pool.hostname);
  }
}

function fromHint(
  name: string,
  routes: readonly HttpRoute[],
): { hostname: string; path: string } | undefined {
  const route = routes.find((r) => routeName(r) === name);
  return route ? { hostname: route.hostname, path: route.path ?? '' } : undefined;
}

function cellExpiries(cells: readonly CellPresence[]): Map<string, number> {
  return new Map(cells.map((c) => [c.cell_id, Date.parse(c.expires_at)]));
}

/** Adds `key` to the set `by` holds under `name`. */
function addKey(by: Map<string, Set<string>>, name: string, key: string): void {
  let keys = by.get(name);
  if (!keys) {
    keys = new Set();
    by.set(name, keys);
  }
  keys.add(key);
}

/** Takes `key` out of the set under `name`, and the set with it once empty. */
function removeKey(by: Map<string, Set<string>>, name: string, key: string): void {
  const keys = by.get(name);
  keys?.delete(key);
  if (keys?.size === 0) by.delete(name);
}
