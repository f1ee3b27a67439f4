/**
 * The processes of `npm run bench router`, each its own node process so that the load generator,
 * the proxy and the backends do not share a CPU's event loop:
 *   node router-bench-parts.js backends N      → N tiny HTTP servers; prints their ports
 *   node router-bench-parts.js router P1,P2,…  → berth's proxy with one route to them; prints its port
 *   node router-bench-parts.js churn P1,P2,…   → the same, plus 1,000 more routes changing 50 times a
 *                                                second (BBS events applied to the table, as the feed does)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ActualLRP, BbsEvent, CellPresence, DesiredLRP } from '../bbs/index.js';
import { createProxyServer, RouterMetrics, RouteTable } from '../router/index.js';
import { benchHost } from './router-bench-host.js';

const iso = new Date().toISOString();
const body = Buffer.from('hello from a bench backend\n');

function desired(guid: string, hostname: string): DesiredLRP {
  return {
    process_guid: guid,
    domain: 'bench',
    instances: 3,
    image: 'none',
    env: {},
    memory_mb: 0,
    disk_mb: 0,
    ports: [8080],
    routes: { http: [{ hostname, port: 8080 }] },
    annotation: '',
    start_timeout_s: 60,
    placement_tags: [],
    created_at: iso,
    modification_tag: { epoch: guid, index: 0 },
  };
}

function actual(guid: string, index: number, port: number, state: ActualLRP['state'] = 'RUNNING'): ActualLRP {
  return {
    process_guid: guid,
    index,
    domain: 'bench',
    instance_guid: `${guid}-${index}`,
    cell_id: 'bench',
    state,
    crash_count: 0,
    last_crashed_at: null,
    crash_reason: '',
    since: iso,
    placement_error: '',
    address: '127.0.0.1',
    ports: [{ container_port: 8080, host_port: port }],
    evacuating: false,
    modification_tag: { epoch: `${guid}-${index}`, index: 1 },
  };
}

const cell: CellPresence = {
  cell_id: 'bench',
  zone: 'z',
  capacity: { memory_mb: 1, disk_mb: 1, containers: 1 },
  rep_url: 'http://127.0.0.1:1',
  placement_tags: [],
  expires_at: new Date(Date.now() + 86_400_000).toISOString(),
};

async function listen(server: ReturnType<typeof createServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function main(): Promise<void> {
  const [role, arg = ''] = process.argv.slice(2);
  if (role === 'backends') {
    const ports: number[] = [];
    for (let i = 0; i < Number(arg); i++) {
      const server = createServer({ keepAlive: true }, (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
        res.end(body);
      });
      server.keepAliveTimeout = 60_000;
      ports.push(await listen(server));
    }
    console.log(ports.join(','));
    return;
  }
  if (role !== 'router' && role !== 'churn')
    throw new Error(`router-bench-parts: unknown role "${String(role)}" (backends, router or churn)`);
  const ports = arg.split(',').map(Number);
  const table = new RouteTable();
  const churn = role === 'churn';
  const churnRoutes = churn ? 1000 : 0;
  table.reset(
    {
      desired_lrps: [
        desired('web', benchHost),
        ...Array.from({ length: churnRoutes }, (_, i) => desired(`r${i}`, `r${i}.bench.berth.localhost`)),
      ],
      actual_lrps: [
        ...ports.map((p, i) => actual('web', i, p)),
        ...Array.from({ length: churnRoutes }, (_, i) => actual(`r${i}`, 0, ports[i % ports.length] ?? 0)),
      ],
      cells: [cell],
    },
    Date.now(),
  );
  const proxy = createProxyServer({ lookup: (h, p) => table.lookup(h, p), metrics: new RouterMetrics() });
  const port = await listen(proxy.server);
  if (churn) {
    // 50 changes a second: a churned route's second instance comes and goes, and every tenth
    // change moves the loaded route's third instance. Each route keeps a running instance: a 5xx
    // under this load would be the router's fault.
    let tick = 0;
    let seq = 0;
    const event = (e: Record<string, unknown>) =>
      ({ id: `0-${++seq}`, created_at: iso, ...e }) as unknown as BbsEvent;
    setInterval(() => {
      tick += 1;
      const guid = tick % 10 === 0 ? 'web' : `r${tick % churnRoutes}`;
      const index = guid === 'web' ? 2 : 1;
      const up = actual(guid, index, ports[(tick + 1) % ports.length] ?? 0);
      const down = actual(guid, index, up.ports[0]?.host_port ?? 0, 'CRASHED');
      const running =
        table.lookup(guid === 'web' ? benchHost : `${guid}.bench.berth.localhost`, '/')?.endpoints ?? [];
      const isUp = running.some((e) => e.index === index);
      table.apply(event({ type: 'actual_lrp_changed', before: isUp ? up : down, after: isUp ? down : up }));
    }, 20);
    setInterval(() => proxy.sweep(table.liveTargets()), 200);
  }
  console.log(port);
}

await main();
