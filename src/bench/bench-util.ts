import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { procStatFields } from '../core/index.js';

/**
 * Runs `fn` `runs` times and returns the median wall time in ms. `before`, when given, runs ahead
 * of each timed call, untimed (to time a command in the state another one leaves the machine in).
 */
export function medianMs(runs: number, fn: () => void, before?: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    before?.();
    const start = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? Number.NaN;
}

/** The nearest-rank `p` percentile (0 < p ≤ 1) of ascending `sorted`; NaN when it is empty. */
export function nearestRank(sorted: ArrayLike<number>, p: number): number {
  return sorted.length === 0 ? Number.NaN : (sorted[Math.ceil(sorted.length * p) - 1] ?? Number.NaN);
}

export function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

export function runOrThrow(cmd: string, args: readonly string[], env: Record<string, string> = {}): string {
  const result = spawnSync(cmd, args, {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    maxBuffer: 256 * 1024 * 1024,
  });
  if (result.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} failed (${result.status}): ${result.stderr}`);
  return result.stdout;
}

let ticks: number | undefined;
/** The kernel's clock ticks per second, the unit of /proc's CPU times (asked once). */
export function clockTicksPerSecond(): number {
  ticks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return ticks;
}

let pageBytes: number | undefined;
/** The kernel's page size, the unit of /proc's resident set (asked once). */
function pageSize(): number {
  pageBytes ??= Number(execFileSync('getconf', ['PAGESIZE'], { encoding: 'utf8' }).trim()) || 4096;
  return pageBytes;
}

/** What process `pid` has used so far, from /proc/PID/stat. */
export interface ProcessUsage {
  /** Its own CPU seconds, user + system. */
  readonly cpuSeconds: number;
  /** The CPU seconds of its children it has waited for. */
  readonly childrenCpuSeconds: number;
  readonly rssBytes: number;
}

export function processUsage(pid: number | 'self'): ProcessUsage {
  // utime, stime, cutime and cstime are fields 14 to 17, rss (in pages) field 24.
  const fields = procStatFields(pid).map(Number);
  const seconds = (a: number, b: number) => ((fields[a] ?? 0) + (fields[b] ?? 0)) / clockTicksPerSecond();
  return {
    cpuSeconds: seconds(11, 12),
    childrenCpuSeconds: seconds(13, 14),
    rssBytes: (fields[21] ?? 0) * pageSize(),
  };
}

export function fmt(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`;
}

/** Stops in-process cells and deletes what their executors still hold (pods, networks, mounts). */
export async function closeCells(
  cells: readonly {
    close(): Promise<void>;
    readonly executor: { list(): { guid: string }[]; deleteContainer(guid: string): Promise<void> };
  }[],
): Promise<void> {
  for (const cell of cells) {
    await cell.close();
    for (const c of cell.executor.list()) await cell.executor.deleteContainer(c.guid);
  }
}

/** The whole machine's busy CPU seconds so far (every process, from /proc/stat). */
export function machineBusySeconds(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.split(/\s+/).slice(1).map(Number) ?? [];
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  const busy = cpu.slice(0, 8).reduce((sum, v, i) => (i === 3 || i === 4 ? sum : sum + v), 0);
  return busy / clockTicksPerSecond();
}
