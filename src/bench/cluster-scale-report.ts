/** What one backend's run of `npm run bench cluster-scale` measured. */
export interface ScaleFigures {
  readonly backend: string;
  readonly total: number;
  readonly cells: number;
  /** Until the last desire request was answered. */
  readonly desiredMs: number;
  /** From the first desire request until every instance was RUNNING. */
  readonly burstMs: number;
  /** The server process's CPU time (user + system) over the burst. */
  readonly burstCpuSeconds: number;
  /** The simulated cells' processes' CPU time over the burst (the reps' own work). */
  readonly cellsBurstCpuSeconds: number;
  /** Every process's CPU over the burst (from /proc/stat), PostgreSQL's and the kernel's included. */
  readonly machineBurstCpuSeconds: number;
  readonly peakRssBytes: number;
  readonly spreadMax: number;
  readonly spreadMin: number;
  /** The server's CPU over the idle window, in % of one core. */
  readonly idleCpuPercent: number;
  /** Every cell process together, over the same window: the tax the cells' own loops put on the machine. */
  readonly cellsIdleCpuPercent: number;
  readonly killedCells: number;
  readonly lostInstances: number;
  /** From the kill -9 until the killed cells held nothing and every instance was RUNNING again. */
  readonly replaceMs: number;
  /** From the kill until no killed cell's presence was left (each lapses a TTL after its last beat). */
  readonly replaceExpiredMs: number;
  /** From the kill until the killed cells held no instance (the converger unclaimed them all). */
  readonly replaceUnclaimedMs: number;
  /** The presence TTL the server granted the cells (src/bbs/cell-pacing.ts), which may exceed the one asked. */
  readonly presenceTtlMs: number;
  /** The server's HTTP requests over the burst, by `METHOD route`. */
  readonly burstRequests: readonly (readonly [string, number])[];
  /** The server's HTTP requests over the idle window, by `METHOD route`, per second. */
  readonly idleRequestsPerSecond: readonly (readonly [string, number])[];
}

const goals = {
  burstSeconds: 60,
  placementsPerSecond: 1_700,
  spread: 1.2,
  idleCpuPercent: 10,
  replaceBeyondTtlSeconds: 10,
};

/** One row per figure, one column per backend, and the goal beside it. */
export function printScaleFigures(figures: readonly ScaleFigures[]): void {
  const rows: [string, (f: ScaleFigures) => string, string][] = [
    ['instances / cells', (f) => `${f.total} / ${f.cells}`, ''],
    ['all desired (API answered)', (f) => seconds(f.desiredMs), ''],
    ['burst: all RUNNING', (f) => seconds(f.burstMs), `<= ${goals.burstSeconds} s`],
    ['placements/s', (f) => ((f.total * 1000) / f.burstMs).toFixed(0), `>= ${goals.placementsPerSecond}`],
    [
      'server CPU over the burst',
      (f) =>
        `${f.burstCpuSeconds.toFixed(1)} s (${((100 * f.burstCpuSeconds * 1000) / f.burstMs).toFixed(0)} %)`,
      '',
    ],
    [
      "cells' CPU over the burst",
      (f) =>
        `${f.cellsBurstCpuSeconds.toFixed(1)} s (${((f.cellsBurstCpuSeconds * 1e3) / f.total).toFixed(2)} ms a placement)`,
      '',
    ],
    [
      'machine CPU over the burst',
      (f) =>
        `${f.machineBurstCpuSeconds.toFixed(1)} s (${((100 * f.machineBurstCpuSeconds * 1000) / f.burstMs).toFixed(0)} % of one core)`,
      '',
    ],
    // The machine is shared: the CPU one placement costs says more than the wall time of a
    // starved run, and bounds what one free core could place.
    ['server CPU per placement', (f) => `${((f.burstCpuSeconds * 1e3) / f.total).toFixed(2)} ms`, ''],
    [
      'placements/s one free core allows',
      (f) => (f.burstCpuSeconds > 0 ? (f.total / f.burstCpuSeconds).toFixed(0) : '-'),
      `>= ${goals.placementsPerSecond}`,
    ],
    ['server peak RSS', (f) => `${(f.peakRssBytes / 2 ** 20).toFixed(0)} MiB`, ''],
    [
      'spread max/min per cell',
      (f) => `${f.spreadMax}/${f.spreadMin} = ${(f.spreadMax / Math.max(1, f.spreadMin)).toFixed(2)}`,
      `<= ${goals.spread}`,
    ],
    ['idle server CPU', (f) => `${f.idleCpuPercent.toFixed(1)} % of a core`, `< ${goals.idleCpuPercent} %`],
    ["idle cells' CPU (all processes)", (f) => `${f.cellsIdleCpuPercent.toFixed(1)} % of a core`, ''],
    ['cells killed (-9) / instances lost', (f) => `${f.killedCells} / ${f.lostInstances}`, ''],
    [
      'lost instances RUNNING elsewhere',
      (f) => `${seconds(f.replaceMs)} (TTL granted ${seconds(f.presenceTtlMs)})`,
      `<= TTL + ${goals.replaceBeyondTtlSeconds} s`,
    ],
    ['  last presence lapsed', (f) => seconds(f.replaceExpiredMs), ''],
    ['  all unclaimed', (f) => seconds(f.replaceUnclaimedMs), ''],
    [
      '  RUNNING, after the last lapse',
      (f) => seconds(f.replaceMs - f.replaceExpiredMs),
      `<= ${goals.replaceBeyondTtlSeconds} s`,
    ],
  ];
  const header = ['', ...figures.map((f) => f.backend), 'goal'];
  const routes = [...new Set(figures.flatMap((f) => f.burstRequests.map(([route]) => route)))].sort();
  rows.push(
    [
      'requests per placement (burst)',
      (f) => (f.burstRequests.reduce((sum, [, n]) => sum + n, 0) / f.total).toFixed(2),
      '',
    ],
    // Where they go: what batching a route would save.
    ...routes.map((route): [string, (f: ScaleFigures) => string, string] => [
      `  ${route}`,
      (f) => ((f.burstRequests.find(([r]) => r === route)?.[1] ?? 0) / f.total).toFixed(3),
      '',
    ]),
  );
  const idleRoutes = [...new Set(figures.flatMap((f) => f.idleRequestsPerSecond.map(([route]) => route)))];
  rows.push(
    [
      'requests/s while idle',
      (f) => f.idleRequestsPerSecond.reduce((sum, [, n]) => sum + n, 0).toFixed(1),
      '',
    ],
    // What an idle cluster still asks: each idle request's CPU is the idle figure's share.
    ...idleRoutes
      .sort()
      .map((route): [string, (f: ScaleFigures) => string, string] => [
        `  ${route}`,
        (f) => (f.idleRequestsPerSecond.find(([r]) => r === route)?.[1] ?? 0).toFixed(1),
        '',
      ]),
  );
  const table = [header, ...rows.map(([name, cell, goal]) => [name, ...figures.map(cell), goal])];
  const widths = header.map((_, c) => Math.max(...table.map((row) => (row[c] ?? '').length)));
  for (const row of table)
    process.stdout.write(`${row.map((v, c) => v.padEnd(widths[c] ?? 0)).join('  ')}\n`);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
