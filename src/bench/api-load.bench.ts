/**
 * `npm run bench api-load [REQUESTS] [CONCURRENCY] [SEED]`: a real `berth server` process (auth on,
 * as it ships) on SQLite and on PostgreSQL, seeded with SEED (default 1,000) DesiredLRPs, then
 * REQUESTS (default 2,000) mixed requests, CONCURRENCY (default 50) at a time over keep-alive
 * connections: half `POST /v1/desired_lrps` of new LRPs, the rest `GET /v1/desired_lrps` at its
 * default page size and a few other lists. Prints requests/s, p50/p99 latency, the statuses seen,
 * and the server's RSS before and after, one backend per column.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServerProcess } from '../testing/server-process.js';
import { type BenchBackend, benchBackends } from './bbs-bench-backends.js';
import { fmt, processUsage } from './bench-util.js';

const total = Number(process.argv[2] ?? 2000);
const concurrency = Number(process.argv[3] ?? 50);
const seedCount = Number(process.argv[4] ?? 1000);

interface Outcome {
  readonly backend: string;
  readonly seconds: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly statuses: string;
  readonly rssBeforeMb: number;
  readonly rssAfterMb: number;
  readonly listBytes: number;
  /** Server CPU per request: unlike wall times, barely moved by other load on the machine. */
  readonly cpuMsPerRequest: number;
  /** The slowest of CONCURRENCY requests that each open a new connection at once. */
  readonly coldMaxMs: number;
}

interface Server {
  readonly child: ChildProcess;
  readonly url: URL;
  readonly token: string;
  stop(): Promise<void>;
}

async function startServer(backend: BenchBackend, dir: string): Promise<Server> {
  // BENCH_SERVER_ARGS adds flags while tuning (e.g. "--auction-interval 1h" to leave the auctioneer out).
  const extra = (process.env.BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean);
  const args = ['server', '--listen', '127.0.0.1:0', '--dir', dir, '--db', backend.db, ...extra];
  // --cpu-prof when BENCH_CPU_PROF=DIR: the server writes a .cpuprofile there on exit.
  const profile = process.env.BENCH_CPU_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
    : [];
  const { child, url, exited } = await startServerProcess(args, { nodeArgs: profile });
  const token = readFileSync(join(dir, 'admin.token'), 'utf8').trim();
  return {
    child,
    url: new URL(url),
    token,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The process's user + system CPU time in ms. */
function cpuMs(pid: number): number {
  return processUsage(pid).cpuSeconds * 1000;
}

function rssMb(pid: number): number {
  return processUsage(pid).rssBytes / 2 ** 20;
}

interface Call {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: string;
}

function lrpBody(guid: string): string {
  const env: Record<string, string> = {};
  for (let i = 0; i < 8; i++) env[`VAR_${i}`] = `value-${i}-${guid}`;
  return JSON.stringify({
    process_guid: guid,
    domain: 'bench',
    // One instance each: every POST creates an UNCLAIMED ActualLRP the auctioneer then tries to
    // place (there is no cell, so it stays unplaced), as a real deploy would.
    instances: 1,
    image: 'busybox',
    command: ['/bin/sh', '-c', 'while true; do sleep 1; done'],
    env,
    memory_mb: 64,
    ports: [8080],
    routes: { http: [{ hostname: `${guid}.example.test`, port: 8080 }] },
    annotation: `bench ${guid}`,
  });
}

/** The mix: POSTs and GETs interleaved, so lists are read while the table grows. */
function workload(runId: string): Call[] {
  // BENCH_ONLY=GET or POST narrows the mix to one kind while tuning (like BENCH_BACKENDS).
  const only = process.env.BENCH_ONLY;
  if (only === 'GET' || only === 'POST') {
    return Array.from({ length: total }, (_, i) =>
      only === 'GET'
        ? { method: 'GET' as const, path: '/v1/desired_lrps' }
        : { method: 'POST' as const, path: '/v1/desired_lrps', body: lrpBody(`${runId}-load-${i}`) },
    );
  }
  const calls: Call[] = [];
  const others = ['/v1/actual_lrps', '/v1/tasks', '/v1/cells', '/v1/domains'];
  const posts = Math.floor(total / 2);
  const otherCount = Math.min(Math.floor(total / 50), total - posts);
  for (let i = 0; i < total; i++) {
    if (i % 2 === 0 && calls.filter((c) => c.method === 'POST').length < posts) {
      calls.push({ method: 'POST', path: '/v1/desired_lrps', body: lrpBody(`${runId}-load-${i}`) });
    } else if (i % 50 === 1 && calls.length - posts < otherCount) {
      calls.push({ method: 'GET', path: others[(i >> 1) % others.length]! });
    } else {
      calls.push({ method: 'GET', path: '/v1/desired_lrps' });
    }
  }
  return calls;
}

function send(
  agent: Agent,
  server: Server,
  call: Call,
): Promise<{ status: number; ms: number; bytes: number }> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: server.url.hostname,
        port: server.url.port,
        method: call.method,
        path: call.path,
        headers: {
          authorization: `Bearer ${server.token}`,
          ...(call.body !== undefined
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(call.body) }
            : {}),
        },
      },
      (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            ms: Number(process.hrtime.bigint() - started) / 1e6,
            bytes,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(call.body);
  });
}

async function runOne(backend: BenchBackend): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-api-'));
  const server = await startServer(backend, dir);
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  try {
    const runId = `r${Date.now().toString(36)}`;
    // Seed: the lists read below return a page of these (or, unpaged, all of them).
    const seeds: Call[] = [];
    for (let i = 0; i < seedCount; i++)
      seeds.push({ method: 'POST', path: '/v1/desired_lrps', body: lrpBody(`${runId}-seed-${i}`) });
    await runAll(agent, server, seeds, 10);
    // Open every connection before the clock starts, as a client's or a load balancer's pool
    // would hold them: the timed run measures requests, not 40 TCP handshakes. What a burst of new
    // connections costs is measured apart, on a fresh agent, and printed as its own row.
    await runAll(agent, server, healthChecks(concurrency * 4), concurrency);
    const coldAgent = new Agent({ keepAlive: true, maxSockets: concurrency });
    const cold = await runAll(coldAgent, server, healthChecks(concurrency), concurrency);
    coldAgent.destroy();
    const coldMaxMs = Math.max(...cold.map((r) => r.ms));
    const listBytes = (await send(agent, server, { method: 'GET', path: '/v1/desired_lrps' })).bytes;
    const rssBeforeMb = rssMb(server.child.pid!);
    const cpuBefore = cpuMs(server.child.pid!);
    const started = process.hrtime.bigint();
    const results = await runAll(agent, server, workload(runId), concurrency);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const cpuMsPerRequest = (cpuMs(server.child.pid!) - cpuBefore) / results.length;
    const rssAfterMb = rssMb(server.child.pid!);
    const latencies = results.map((r) => r.ms).sort((a, b) => a - b);
    const pct = (p: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
    const counts = new Map<number, number>();
    for (const r of results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
    return {
      backend: backend.name,
      seconds,
      p50: pct(50),
      p99: pct(99),
      max: latencies.at(-1)!,
      statuses: [...counts].map(([s, n]) => `${n}×${s}`).join(' '),
      rssBeforeMb,
      rssAfterMb,
      listBytes,
      cpuMsPerRequest,
      coldMaxMs,
    };
  } finally {
    agent.destroy();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `n` unauthenticated GET /healthz: they open connections and cost the server next to nothing. */
function healthChecks(n: number): Call[] {
  return Array.from({ length: n }, () => ({ method: 'GET' as const, path: '/healthz' }));
}

async function runAll(agent: Agent, server: Server, calls: readonly Call[], width: number) {
  const results: { status: number; ms: number; bytes: number }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < calls.length) {
      const call = calls[next++]!;
      results.push(await send(agent, server, call));
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}

const backends = await benchBackends();
const outcomes: Outcome[] = [];
try {
  for (const backend of backends) outcomes.push(await runOne(backend));
} finally {
  for (const backend of backends) await backend.cleanup();
}

const rows: [string, (o: Outcome) => string][] = [
  ['requests/s', (o) => (total / o.seconds).toFixed(0)],
  ['total', (o) => fmt(o.seconds * 1000)],
  ['p50', (o) => fmt(o.p50)],
  ['p99', (o) => fmt(o.p99)],
  ['max', (o) => fmt(o.max)],
  ['server CPU per request', (o) => `${o.cpuMsPerRequest.toFixed(2)} ms`],
  [`${concurrency} new connections, max`, (o) => fmt(o.coldMaxMs)],
  ['statuses', (o) => o.statuses],
  ['GET /v1/desired_lrps body', (o) => `${(o.listBytes / 1024).toFixed(0)} KiB`],
  ['server RSS before', (o) => `${o.rssBeforeMb.toFixed(0)} MB`],
  ['server RSS after', (o) => `${o.rssAfterMb.toFixed(0)} MB`],
];
console.log(
  `${total} requests (${Math.floor(total / 2)} POST /v1/desired_lrps, the rest GET lists at their default page size), ${concurrency} concurrent, ${seedCount} LRPs seeded, auth on`,
);
const width = 28;
console.log(['', ...outcomes.map((o) => o.backend)].map((c) => c.padEnd(width)).join(''));
for (const [label, value] of rows)
  console.log([label, ...outcomes.map(value)].map((c) => c.padEnd(width)).join(''));
process.exit(0);
