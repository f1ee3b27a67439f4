import { spawnSync } from 'node:child_process';

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
