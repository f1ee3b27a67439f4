/**
 * `npm run bench cli-start [RUNS]`: how long the CLI takes, end to end as a user runs it
 * (bin/berth, a fresh node each time), for `berth version` and three cluster commands against a
 * real local `berth server` with a few records: `lrp list`, `system status`, `ps`. Beside them
 * `node -e 0`, the floor every command pays. Prints median and p90 wall time side by side, and the
 * median CPU time (user + system, via /usr/bin/time) that load on the machine does not inflate. Goal (issue 18):
 * `berth lrp list` ≤ 150 ms on the development machine (it was ~0.65 s).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstLine } from '../testing/cluster-harness.js';
import { fmt } from './bench-util.js';

const runs = Number(process.argv[2] ?? 20);
const berth = new URL('../../bin/berth', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'berth-bench-cli-'));

/** The environment of the timed commands: no $BERTH_TOKEN, so the local admin.token is read. */
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'BERTH_TOKEN'));
/** /usr/bin/time reports the CPU a command used, which a busy machine's wall time hides. */
const cpuTimer = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

interface Timing {
  readonly median: number;
  readonly p90: number;
  /** Median user + system CPU time, when /usr/bin/time is there. */
  readonly cpu: number | undefined;
}

/** Median and 90th percentile wall time of `runs` runs of a command (a failing run is an error). */
function time(
  cmd: string,
  args: readonly string[],
  okCodes: readonly number[] = [0],
  runEnv: NodeJS.ProcessEnv = env,
): Timing {
  const times: number[] = [];
  const cpus: number[] = [];
  const report = join(work, 'time.out');
  for (let i = 0; i < runs; i++) {
    const [file, argv] = cpuTimer ? [cpuTimer, ['-f', '%U %S', '-o', report, cmd, ...args]] : [cmd, args];
    const start = process.hrtime.bigint();
    const result = spawnSync(file, argv, { encoding: 'utf8', env: runEnv });
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (!okCodes.includes(result.status ?? -1))
      throw new Error(`${cmd} ${args.join(' ')} failed (${result.status}): ${result.stderr}`);
    if (cpuTimer) {
      const [user = 0, sys = 0] =
        readFileSync(report, 'utf8').trim().split('\n').at(-1)?.split(' ').map(Number) ?? [];
      cpus.push((user + sys) * 1000);
    }
  }
  return {
    median: quantile(times, 0.5),
    p90: quantile(times, 0.9),
    cpu: cpus.length > 0 ? quantile(cpus, 0.5) : undefined,
  };
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN;
}

let server: ChildProcess | undefined;
try {
  server = spawn(berth, ['server', '--dir', work, '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const url = await firstLine(server);
  const client = ['--server', url, '--dir', work];
  // A few records, so each list has something to render.
  for (const guid of ['web', 'worker', 'cron']) {
    const file = join(work, `${guid}.json`);
    spawnSync('sh', ['-c', `echo '{"process_guid":"${guid}","image":"bb:1","instances":0}' > ${file}`]);
    spawnSync(berth, ['lrp', 'desire', ...client, file]);
  }
  // `system status shop` of a server without that system: exit 3, after the same request.
  // bin/berth starts the client commands without NODE_EXTRA_CA_CERTS (node parses that whole
  // bundle before any JavaScript): the second row is the floor those commands stand on.
  const { NODE_EXTRA_CA_CERTS: _caBundle, ...envWithoutCa } = env;
  const rows: [string, string, readonly string[], readonly number[], NodeJS.ProcessEnv?][] = [
    ['node -e 0', process.execPath, ['-e', '0'], [0]],
    ['node -e 0 (no CA bundle)', process.execPath, ['-e', '0'], [0], envWithoutCa],
    ['berth version', berth, ['version'], [0]],
    ['berth lrp list', berth, ['lrp', 'list', ...client], [0]],
    ['berth system status shop', berth, ['system', 'status', 'shop', ...client], [0, 3]],
    ['berth ps', berth, ['ps', ...client], [0]],
  ];
  for (const [, cmd, args] of rows) spawnSync(cmd, args); // warm the page cache
  console.log(`CLI start, ${runs} runs each, against a local server (${url}):`);
  console.log(
    `  ${'command'.padEnd(28)} ${'median'.padStart(10)} ${'p90'.padStart(10)} ${'CPU'.padStart(10)}`,
  );
  for (const [name, cmd, args, ok, rowEnv] of rows) {
    const { median, p90, cpu } = time(cmd, args, ok, rowEnv);
    const cpuText = cpu === undefined ? '-' : fmt(cpu);
    console.log(
      `  ${name.padEnd(28)} ${fmt(median).padStart(10)} ${fmt(p90).padStart(10)} ${cpuText.padStart(10)}`,
    );
  }
  console.log(
    '  (median and p90 wall time; CPU: median user + system time, what a busy machine does not inflate)',
  );
  console.log('  goal: berth lrp list ≤ 150 ms (issue 18)');
} finally {
  server?.kill('SIGTERM');
  if (server && server.exitCode === null) await new Promise((resolve) => server?.once('exit', resolve));
  rmSync(work, { recursive: true, force: true });
}
