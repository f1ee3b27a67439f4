/**
 * `npm run bench logs [SAMPLES]`: end-to-end latency of `berth logs -f`, from a line printed in a
 * container to the line read by a client of the server's `GET /v1/logs` (container → pod log →
 * the rep's follower → NDJSON to the server → merged NDJSON to the client). Two local cells, an
 * LRP of 2 instances each printing the host's uptime (/proc/uptime is not namespaced) every 50 ms;
 * the client compares it with its own uptime when the line arrives: 10 ms resolution. Goal: < 500 ms.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { clusterSingletons, startBbsServer } from '../api/index.js';
import { startCell } from '../rep/index.js';
import { makeBusyboxRootfs } from '../runtime/busybox-rootfs.js';
import { openImageStore } from '../runtime/image/index.js';
import { fmt } from './bench-util.js';

const samples = Number(process.argv[2] ?? 400);
const root = mkdtempSync(join(tmpdir(), 'berth-bench-logs-'));
const uptimeMs = () => Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 1000;

const server = await startBbsServer({
  db: join(root, 'bbs.sqlite3'),
  listen: '127.0.0.1:0',
  logger: false,
  auth: 'none',
  singletons: (store) => clusterSingletons(store, { convergenceIntervalMs: 5000, auctionIntervalMs: 100 }),
});
const cells = [];
for (let i = 0; i < 2; i++) {
  const dir = join(root, `cell${i}`);
  const images = openImageStore(dir);
  await images.importRootfs(makeBusyboxRootfs(join(dir, 'rootfs-src')), 'bb:1');
  cells.push(
    await startCell({
      bbs: server.store,
      cellId: `cell${i}`,
      zone: `z${i}`,
      dataDir: dir,
      capacity: { memory_mb: 4096, disk_mb: 65536, containers: 16 },
      images,
      listen: '127.0.0.1:0',
      address: '127.0.0.1',
      pollIntervalMs: 1000,
      presenceTtlMs: 10_000,
    }),
  );
}
await server.store.upsertDomain({ domain: 'bench', ttl_ms: 0 });
await server.store.desireLRP({
  process_guid: 'printer',
  domain: 'bench',
  instances: 2,
  image: 'bb:1',
  command: ['/bin/sh', '-c', 'while true; do read up idle < /proc/uptime; echo "up $up"; sleep 0.05; done'],
  env: {},
  memory_mb: 16,
  disk_mb: 16,
  ports: [],
  routes: {},
  annotation: '',
  start_timeout_s: 60,
  placement_tags: [],
});
for (;;) {
  const lrps = await server.store.listActualLRPs({ process_guid: 'printer' });
  if (lrps.filter((l) => l.state === 'RUNNING').length === 2) break;
  await new Promise((r) => setTimeout(r, 200));
}

const res = await fetch(`${server.url}/v1/logs?app=printer&follow=true&tail=0`);
const lines = createInterface({ input: Readable.fromWeb(res.body as never) });
const latencies: number[] = [];
const sources = new Set<string>();
// The first second is the stream's start: the server holds what comes until every instance has
// sent its backlog (to merge it by time), so lines printed meanwhile wait for the slowest attach.
let warmUpUntil: number | undefined;
for await (const text of lines) {
  const line = JSON.parse(text) as { source: string; line?: string };
  const up = /^up ([\d.]+)$/.exec(line.line ?? '')?.[1];
  if (up === undefined) continue;
  warmUpUntil ??= Date.now() + 1000;
  if (Date.now() < warmUpUntil) continue;
  latencies.push(uptimeMs() - Number(up) * 1000);
  sources.add(line.source);
  if (latencies.length >= samples) break;
}
lines.close();
latencies.sort((a, b) => a - b);
const pct = (p: number) =>
  latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? Number.NaN;
console.log(
  `berth logs -f, ${latencies.length} lines of ${[...sources].sort().join(', ')}: printed → read by the client p50 ${fmt(pct(50))}, p99 ${fmt(pct(99))}, max ${fmt(latencies.at(-1) ?? Number.NaN)} (10 ms resolution, after a 1 s warm-up; goal < 500 ms)`,
);
for (const cell of cells) {
  await cell.close();
  for (const c of cell.executor.list()) await cell.executor.deleteContainer(c.guid);
}
await server.close();
rmSync(root, { recursive: true, force: true });
process.exit(0);
