/**
 * `npm run bench router [SECONDS] [CONNECTIONS]`: berth's router and Debian's nginx side by side as
 * the same reverse proxy (one route, three tiny node backends, keep-alive to them). Full load:
 * autocannon for SECONDS (default 10) with CONNECTIONS (default 50), requests/s and p99. Then p99
 * latency at half load, twice: at half of berth's full rate and at half of nginx's, each the same
 * steady offered rate (paced-load.ts: open loop, latency from when each request was due) through
 * berth, through nginx and straight to one backend, in turns of SECONDS / 5; a proxy's p99 less the backend's own is its
 * added latency. autocannon's own rate limit is not used there: it sends at full speed until each
 * second's quota is spent, so its "half load" is full load half the time. Full-load latencies are
 * taken from each answer (autocannon's `response` event, a float of ms) rather than its histogram,
 * which keeps whole milliseconds only. nginx runs one worker (berth's router is one process),
 * non-daemon, with its config in a temp dir. Each proxy runs on a CPU of its own (BENCH_PIN=0: no
 * pinning). Then the route-churn case: 1,000 more routes changing 50 times a second under full
 * load, counting 5xx answers (none is the goal: every route keeps a healthy instance).
 * Goal (issue 22): ≥ 1/2 of nginx's requests/s, p99 added latency < 2 ms at half load.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { hasCommand, nearestRank } from './bench-util.js';
import { type PacedResult, pacedLoadInTurns } from './paced-load.js';
import { benchHost } from './router-bench-host.js';

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 50);
const parts = fileURLToPath(new URL('./router-bench-parts.js', import.meta.url));
const children: ChildProcess[] = [];

// On a machine of few cores the load generator, the backends and the proxy fight over them, and
// that queueing lands in every latency. With BENCH_PIN (on by default where taskset and 2 CPUs
// are), each proxy (berth's router and nginx alike) runs on CPU 1 and everything else (this load
// generator, the backends) on CPU 0: each proxy has a core of its own, as it would deployed.
const pin = process.env.BENCH_PIN !== '0' && availableParallelism() >= 2 && hasCommand('taskset');
const proxyCpu = '1';
if (pin) spawnSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

/** `command args`, on the proxies' CPU when pinning. */
function onProxyCpu(command: string, args: readonly string[]): [string, string[]] {
  return pin ? ['taskset', ['-c', proxyCpu, command, ...args]] : [command, [...args]];
}

function startPart(args: string[]): Promise<string> {
  const [command, argv] =
    args[0] === 'backends'
      ? [process.execPath, [parts, ...args]]
      : onProxyCpu(process.execPath, [parts, ...args]);
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout?.on('data', (c: Buffer) => {
      text += c.toString();
      if (text.includes('\n')) resolve(text.trim());
    });
    child.once('exit', (code) => reject(new Error(`${args[0]} exited ${code}`)));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function startNginx(backendPorts: readonly number[]): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-nginx-'));
  const port = await freePort();
  const conf = `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream app { ${backendPorts.map((p) => `server 127.0.0.1:${p};`).join(' ')} keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    server_name ${benchHost};
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Request-Id $request_id;
    }
  }
}
`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const [command, argv] = onProxyCpu('nginx', [
    '-p',
    dir,
    '-c',
    join(dir, 'nginx.conf'),
    '-g',
    'daemon off;',
  ]);
  const child = spawn(command, argv, { stdio: 'inherit' });
  children.push(child);
  child.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  // Up once it answers.
  for (let i = 0; i < 50; i++) {
    const r = await load(port, 1, 0.2).catch(() => undefined);
    if (r && r.non2xx === 0 && r.requests > 0) return port;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('nginx did not start');
}

interface Load {
  readonly rps: number;
  /** Percentiles of the 2xx answers' latencies, ms with µs resolution. */
  readonly p99: number;
  readonly p50: number;
  readonly requests: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly fivexx: number;
}

async function load(port: number, conns: number, duration: number): Promise<Load> {
  const run = autocannon({
    url: `http://127.0.0.1:${port}/`,
    headers: { host: benchHost },
    connections: conns,
    duration,
  });
  // Each 2xx answer's latency as autocannon timed it (hrtime, write of the request to the end of
  // the answer). A closed loop: each connection sends its next request when the last is answered.
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  run.on('response', (_client, status, _bytes, ms) => {
    if (status < 200 || status >= 300) return;
    if (count === latencies.length) {
      const grown = new Float64Array(latencies.length * 2);
      grown.set(latencies);
      latencies = grown;
    }
    latencies[count++] = ms;
  });
  const result = await run;
  const sorted = latencies.subarray(0, count).sort();
  return {
    rps: result.requests.average,
    p99: nearestRank(sorted, 0.99),
    p50: nearestRank(sorted, 0.5),
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    fivexx: result['5xx'],
  };
}

async function main(): Promise<void> {
  const backendPorts = (await startPart(['backends', '3'])).split(',').map(Number);
  const direct = backendPorts[0] ?? 0;
  const routerPort = Number(await startPart(['router', backendPorts.join(',')]));
  const nginx = hasCommand('nginx') ? await startNginx(backendPorts) : undefined;
  if (nginx === undefined) console.log('nginx is not installed (apt-get install nginx): berth alone');

  // Warm up both (JIT, connection pools), then full load.
  await load(routerPort, connections, 2);
  if (nginx) await load(nginx, connections, 2);
  const routerFull = await load(routerPort, connections, seconds);
  const nginxFull = nginx ? await load(nginx, connections, seconds) : undefined;

  // Half load, two ways, each the same offered rate through each proxy and straight to one backend
  // (whose own p99 is taken off each proxy's): half of berth's own full rate (berth at half its
  // capacity, the usual meaning), and half of nginx's (the goal's yardstick for requests/s; berth

  const ms = (v: number) => v.toFixed(2);
  console.log(
    `router bench: ${seconds} s per run, ${connections} connections, 3 backends, one route; ${pin ? `each proxy on CPU ${proxyCpu}, load generator and backends on CPU 0` : 'no CPU pinning'}`,
  );
  const rates: [string, number][] = [["half of berth's full rate", routerFull.rps / 2]];
  if (nginxFull) rates.push(["half of nginx's full rate", nginxFull.rps / 2]);
  const added: number[] = [];
  for (const [what, rate] of rates) {
    const [alone, routerHalf, nginxHalf] = (await pacedLoadInTurns({
      ports: nginx ? [direct, routerPort, nginx] : [direct, routerPort],
      host: benchHost,
      rate,
      seconds,
      connections,
      rounds: 5,
    })) as [PacedResult, PacedResult, PacedResult | undefined];
    console.log(
      `full load: requests/s and p99 (ms); half load (${what}): ${rate.toFixed(0)} req/s offered to each, p50 and p99 (ms)`,
    );
    console.log(
      `${'proxy'.padEnd(15)} ${'req/s'.padStart(8)} ${'p99'.padStart(8)} ${'half p50'.padStart(9)} ${'half p99'.padStart(9)} ${'p99 added'.padStart(10)} ${'fails'.padStart(6)}`,
    );
    const row = (name: string, full: Load | undefined, h: PacedResult) =>
      `${name.padEnd(15)} ${(full ? full.rps.toFixed(0) : '-').padStart(8)} ${(full ? ms(full.p99) : '-').padStart(8)} ${ms(h.p50).padStart(9)} ${ms(h.p99).padStart(9)} ${(full ? ms(h.p99 - alone.p99) : '-').padStart(10)} ${String(full ? full.non2xx + full.errors : h.non2xx + h.errors).padStart(6)}`;
    console.log(row('backend direct', undefined, alone));
    console.log(row('berth router', routerFull, routerHalf));
    if (nginxFull && nginxHalf) console.log(row('nginx (1 wkr)', nginxFull, nginxHalf));
    added.push(routerHalf.p99 - alone.p99);
  }
  const ratio = nginxFull ? routerFull.rps / nginxFull.rps : Number.NaN;
  const addedText = rates.map(([what], i) => `${ms(added[i] ?? Number.NaN)} ms at ${what}`).join(', ');
  console.log(
    `berth/nginx requests/s: ${nginxFull ? `${ratio.toFixed(2)} (goal ≥ 0.50: ${ratio >= 0.5 ? 'met' : 'NOT met'})` : 'no nginx'}; berth p99 added: ${addedText} (goal < 2 ms at half load)`,
  );

  // Route churn: a fresh router with 1,000 more routes changing 50 times a second, under full load.
  const churnPort = Number(await startPart(['churn', backendPorts.join(',')]));
  await load(churnPort, connections, 1);
  const churn = await load(churnPort, connections, seconds);
  console.log(
    `route churn (1,000 routes, 50 changes/s): ${churn.rps.toFixed(0)} req/s, p99 ${ms(churn.p99)} ms, ${churn.requests} requests, 5xx ${churn.fivexx}, errors ${churn.errors} (goal: no 5xx)`,
  );
}

try {
  await main();
} finally {
  for (const child of children) child.kill('SIGTERM');
}
