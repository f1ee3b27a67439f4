/**
 * An open-loop load at a steady rate, for latency at part load. autocannon's rate limit
 * (`overallRate`) is not one: each connection sends as fast as it can until its quota for the
 * second is used up, then waits for the next second, so "half load" is full load for half of each
 * second and its latencies are full load's. Here request i is due at start + i / rate whatever
 * happened before it, spread over the second, and its latency counts from when it was due (so a
 * generator or proxy that falls behind shows as latency: no coordinated omission).
 */
import { Pool } from 'undici';
import { nearestRank } from './bench-util.js';

export interface PacedResult {
  /** Answers per second over the run. */
  readonly rps: number;
  /** Percentiles (ms, µs resolution) of the 2xx answers' latencies from when each was due. */
  readonly p50: number;
  readonly p99: number;
  readonly requests: number;
  readonly non2xx: number;
  readonly errors: number;
}

interface PacedOptions {
  readonly port: number;
  readonly host: string;
  readonly rate: number;
  readonly seconds: number;
  /** Keep-alive connections to spread the requests over (at most this many in flight). */
  readonly connections: number;
}

/** What one run saw: the 2xx answers' latencies (ms, from when each was due) and the failures. */
interface PacedRun {
  readonly latencies: Float64Array;
  readonly seconds: number;
  readonly non2xx: number;
  readonly errors: number;
}

async function pacedRun(options: PacedOptions): Promise<PacedRun> {
  const pool = new Pool(`http://127.0.0.1:${options.port}`, {
    connections: options.connections,
    pipelining: 1,
  });
  const total = Math.max(1, Math.round(options.rate * options.seconds));
  const latencies = new Float64Array(total);
  let answered = 0;
  let non2xx = 0;
  let errors = 0;
  const inFlight = new Set<Promise<void>>();
  const send = (due: number) => {
    const done = pool
      .request({ path: '/', method: 'GET', headers: { host: options.host } })
      .then(async ({ statusCode, body }) => {
        await body.dump();
        const ms = Number(process.hrtime.bigint() - BigInt(Math.round(due * 1e6))) / 1e6;
        if (statusCode >= 200 && statusCode < 300) latencies[answered++] = ms;
        else non2xx++;
      })
      .catch(() => {
        errors++;
      })
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  };
  const startMs = Number(process.hrtime.bigint()) / 1e6;
  const intervalMs = 1000 / options.rate;
  let next = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = Number(process.hrtime.bigint()) / 1e6;
      // Every request due by now goes out now; the timer's own lateness is in their latencies.
      while (next < total && startMs + next * intervalMs <= now) send(startMs + next++ * intervalMs);
      if (next >= total) resolve();
      else setTimeout(tick, Math.max(0, startMs + next * intervalMs - now));
    };
    tick();
  });
  await Promise.all(inFlight);
  const elapsedS = (Number(process.hrtime.bigint()) / 1e6 - startMs) / 1000;
  await pool.close();
  return { latencies: latencies.subarray(0, answered), seconds: elapsedS, non2xx, errors };
}

/**
 * The same offered rate to several targets in turns (`rounds` slices of `seconds / rounds` each,
 * after a one-second warm-up of each): a stall of the machine (another process, a GC of the
 * generator) then falls on all of them alike rather than on whichever ran at that moment.
 */
export async function pacedLoadInTurns(options: {
  readonly ports: readonly number[];
  readonly host: string;
  readonly rate: number;
  readonly seconds: number;
  readonly connections: number;
  readonly rounds: number;
}): Promise<PacedResult[]> {
  const { ports, rounds } = options;
  const runs: PacedRun[][] = ports.map(() => []);
  for (const port of ports) await pacedRun({ ...options, port, seconds: 1 });
  for (let round = 0; round < rounds; round++) {
    for (const [i, port] of ports.entries()) {
      runs[i]?.push(await pacedRun({ ...options, port, seconds: options.seconds / rounds }));
    }
  }
  return runs.map(summary);
}

/** The runs' answers as one: their latencies' percentiles over all of them, their totals. */
function summary(runs: readonly PacedRun[]): PacedResult {
  const count = runs.reduce((n, r) => n + r.latencies.length, 0);
  const sorted = new Float64Array(count);
  let at = 0;
  for (const r of runs) {
    sorted.set(r.latencies, at);
    at += r.latencies.length;
  }
  sorted.sort();
  return {
    rps: count / runs.reduce((s, r) => s + r.seconds, 0),
    p50: nearestRank(sorted, 0.5),
    p99: nearestRank(sorted, 0.99),
    requests: count,
    non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
  };
}
