import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';

export interface BenchBackend {
  readonly name: 'SQLite' | 'PostgreSQL';
  readonly db: string;
  cleanup(): Promise<void>;
}

/**
 * The two backends every BBS benchmark runs on: a SQLite file in a temp dir, and a PostgreSQL
 * server — `BERTH_BENCH_POSTGRES_URL` when given, else a throw-away one started by the test
 * harness (benchmarks, like tests, start their own database).
 */
export async function benchBackends(): Promise<BenchBackend[]> {
  // BENCH_BACKENDS=sqlite (or =postgres) narrows a run to one backend while tuning.
  const wanted = (process.env.BENCH_BACKENDS ?? 'sqlite,postgres').split(',');
  const backends: BenchBackend[] = [];
  if (wanted.includes('sqlite')) {
    const dir = mkdtempSync(join(tmpdir(), 'berth-bench-'));
    backends.push({
      name: 'SQLite',
      db: join(dir, 'bbs.sqlite3'),
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    });
  }
  if (!wanted.includes('postgres')) return backends;
  const url = process.env.BERTH_BENCH_POSTGRES_URL;
  if (url) {
    backends.push({ name: 'PostgreSQL', db: url, cleanup: async () => {} });
    return backends;
  }
  const skip = postgresSkipReason();
  if (skip) {
    process.stdout.write(`PostgreSQL skipped: ${skip}\n`);
    return backends;
  }
  const server = await startPostgres('bench');
  backends.push({ name: 'PostgreSQL', db: server.url, cleanup: () => server.stop() });
  return backends;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Runs `measure` on each backend in turn, cleaning each up after its run, then exits. */
export async function onEachBackend(measure: (backend: BenchBackend) => Promise<void>): Promise<never> {
  for (const backend of await benchBackends()) {
    try {
      await measure(backend);
    } finally {
      await backend.cleanup();
    }
  }
  process.exit(0);
}
