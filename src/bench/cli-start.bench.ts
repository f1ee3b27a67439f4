/**
 * `npm run bench cli-start [RUNS]`: how long the CLI takes, end to end as a user runs it
 * (bin/berth, a fresh node each time), for `berth version` and three cluster commands against a
 * real local `berth server` with a few records: `lrp list`, `system status`, `ps`. Beside them
 * `node -e 0`, the floor every command pays. Prints median and p90 side by side. Goal (issue 18):
 * `berth lrp list` ≤ 150 ms on the development machine (it was ~0.65 s).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstLine } from '../testing/cluster-harness.js';
import { fmt } from './bench-util.js';

const runs = Number(process.argv[2] ?? 20);
const berth = new URL('../../bin/berth', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'berth-bench-cli-'));

/** Median and 90th percentile of `runs` timed runs of a command (a failing run is an error). */
function time(cmd: string, args: readonly string[]): { median: number; p90: number } {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    const result = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, BERTH_TOKEN: '' } });
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (result.status !== 0 && !(args.includes('status') && result.status === 3))
      throw new Error(`${cmd} ${args.join(' ')} failed (${result.status}): ${result.stderr}`);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(times.length * q))] ?? Number.NaN;
  return { median: at(0.5), p90: at(0.9) };
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
  const rows: [string, string, readonly string[]][] = [
    ['node -e 0', process.execPath, ['-e', '0']],
    ['berth version', berth, ['version']],
    ['berth lrp list', berth, ['lrp', 'list', ...client]],
    ['berth system status shop', berth, ['system', 'status', 'shop', ...client]],
    ['berth ps', berth, ['ps', ...client]],
  ];
  for (const [, cmd, args] of rows) spawnSync(cmd, args); // warm the page cache
  console.log(`CLI start, ${runs} runs each, against a local server (${url}):`);
  console.log(`  ${'command'.padEnd(28)} ${'median'.padStart(10)} ${'p90'.padStart(10)}`);
  for (const [name, cmd, args] of rows) {
    const { median, p90 } = time(cmd, args);
    console.log(`  ${name.padEnd(28)} ${fmt(median).padStart(10)} ${fmt(p90).padStart(10)}`);
  }
  console.log('  goal: berth lrp list ≤ 150 ms (issue 18)');
} finally {
  server?.kill('SIGTERM');
  if (server && server.exitCode === null) await new Promise((resolve) => server?.once('exit', resolve));
  rmSync(work, { recursive: true, force: true });
}
