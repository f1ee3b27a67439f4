/**
 * `npm run bench console-load [LRPS] [PER_LRP] [CELLS] [RUNS]`: the console's page load at size —
 * by default 1,000 LRPs × 10 RUNNING instances on 100 cells (issue 24) — in Debian's headless
 * Chromium against a real `berth server` process on SQLite. Printed, median and max of RUNS
 * (default 5) fresh page loads each:
 * - overview: navigation start → the overview's tile shows every instance RUNNING;
 * - instances: navigation start → the instance table holds every instance (rows drawn);
 * - filter: a typed filter (one LRP's guid) → the table shows that LRP's instances only;
 * - sort: a click on the cell column → the first row drawn is the smallest cell;
 * - cells: navigation start → the cell table lists every cell with its meters;
 * and the page's JS heap after the loads.
 *
 * The cluster is seeded into the store before the server starts (bbs-seed.ts: one UPDATE makes
 * the instances RUNNING, as the convergence benchmarks do) and the cells are presences with a
 * long lease: placing 10,000 instances through reps is what `cluster-scale` measures, not this.
 * The server runs with its periodic passes at an hour so nothing moves while the page loads.
 * There is no peer console to load beside it on this machine; the figures stand alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { openBbsStore } from '../bbs/index.js';
import { launchHeadlessChromium } from '../testing/headless-chromium.js';
import { startServerProcess } from '../testing/server-process.js';
import { median } from './bbs-bench-backends.js';
import { benchProcessGuid, seedRunningLrps } from './bbs-seed.js';
import { fmt, hasCommand } from './bench-util.js';

const lrps = Number(process.argv[2] ?? 1000);
const perLrp = Number(process.argv[3] ?? 10);
const cells = Number(process.argv[4] ?? 100);
const runs = Number(process.argv[5] ?? 5);
const total = lrps * perLrp;

async function seed(db: string): Promise<void> {
  const store = await openBbsStore(db);
  try {
    await seedRunningLrps(store, 0, total, cells, perLrp);
    for (let n = 0; n < cells; n += 1)
      await store.heartbeatCell({
        presence: {
          cell_id: `cell-${n}`,
          zone: `z${n % 3}`,
          capacity: { memory_mb: 65_536, disk_mb: 262_144, containers: 256 },
          rep_url: 'http://127.0.0.1:9',
          placement_tags: [],
        },
        ttl_ms: 6 * 3600_000,
      });
  } finally {
    await store.close();
  }
}

/** Milliseconds from `start` until `selector` is in the page. */
async function timeUntil(page: Page, selector: string, start: number): Promise<number> {
  await page.waitForSelector(selector, { timeout: 300_000 });
  return performance.now() - start;
}

/** Where the first overview load spent its time: each request the page made, slowest first. */
async function printResources(page: Page): Promise<void> {
  const entries = await page.evaluate(() =>
    performance.getEntriesByType('resource').map((e) => ({
      name: new URL(e.name).pathname + new URL(e.name).search,
      start: e.startTime,
      ms: e.duration,
    })),
  );
  process.stdout.write('first overview load, requests by start time (ms from navigation):\n');
  for (const e of entries.slice(0, 30))
    process.stdout.write(
      `  ${e.start.toFixed(0).padStart(6)} +${e.ms.toFixed(0).padStart(5)}  ${e.name.slice(0, 90)}\n`,
    );
}

function report(label: string, values: readonly number[]): void {
  process.stdout.write(
    `${label.padEnd(44)} median ${fmt(median(values)).padStart(9)}   max ${fmt(Math.max(...values)).padStart(9)}\n`,
  );
}

async function main(): Promise<void> {
  if (!hasCommand('chromium'))
    throw new Error('console-load needs Debian chromium (scripts/setup installs it)');
  const dir = mkdtempSync(join(tmpdir(), 'berth-console-load-'));
  const db = join(dir, 'bbs.sqlite3');
  const seededAt = performance.now();
  await seed(db);
  process.stdout.write(
    `seeded ${lrps} LRPs × ${perLrp} = ${total} RUNNING instances on ${cells} cells in ${fmt(performance.now() - seededAt)}\n`,
  );
  const server = await startServerProcess([
    'server',
    '--dir',
    join(dir, 'server'),
    '--db',
    db,
    '--listen',
    '127.0.0.1:0',
    '--auth',
    'none',
    '--no-router',
    '--convergence-interval',
    '1h',
    '--auction-interval',
    '1h',
  ]);
  const browser = await launchHeadlessChromium();
  const overview: number[] = [];
  const table: number[] = [];
  const filter: number[] = [];
  const sort: number[] = [];
  const cellTable: number[] = [];
  let heapMb = 0;
  try {
    const oneLrp = benchProcessGuid(7);
    for (let run = 0; run < runs; run += 1) {
      const context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
      const page = await context.newPage();
      let start = performance.now();
      await page.goto(`${server.url}/console/`, { waitUntil: 'commit' });
      overview.push(
        await timeUntil(page, `#cluster .stat:has-text("running") .stat-value:text-is("${total}")`, start),
      );
      if (run === 0) await printResources(page);
      start = performance.now();
      await page.goto(`${server.url}/console/instances`, { waitUntil: 'commit' });
      table.push(await timeUntil(page, `#instance-count:text-is("${total} of ${total} instances")`, start));
      await page.waitForSelector('#instance-table tbody tr[data-key]');
      start = performance.now();
      await page.fill('#instance-filter', oneLrp);
      filter.push(await timeUntil(page, `#instance-count:text-is("${perLrp} of ${total} instances")`, start));
      await page.fill('#instance-filter', '');
      await page.waitForSelector(`#instance-count:text-is("${total} of ${total} instances")`);
      start = performance.now();
      await page.click('#instance-table button[data-sort="cell_id"]');
      sort.push(
        await timeUntil(page, '#instance-table tbody tr[data-key]:first-child :text-is("cell-0")', start),
      );
      start = performance.now();
      await page.goto(`${server.url}/console/cells`, { waitUntil: 'commit' });
      cellTable.push(await timeUntil(page, `#cell-count:text-is("${cells} cells")`, start));
      heapMb = Math.max(
        heapMb,
        (await page.evaluate(
          () =>
            (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory?.usedJSHeapSize ?? 0,
        )) /
          2 ** 20,
      );
      await context.close();
    }
  } finally {
    await browser.close();
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`\nconsole page load, ${runs} fresh loads (1366×768, headless Chromium)\n`);
  report('overview: all instances counted', overview);
  report(`instances: table of ${total} ready`, table);
  report('filter to one LRP', filter);
  report('sort by cell', sort);
  report(`cells: table of ${cells} ready`, cellTable);
  process.stdout.write(`page JS heap (largest)                        ${heapMb.toFixed(1)} MiB\n`);
}

await main();
process.exit(0);
