// `npm run bench console-load`: the console's page with 1,000 LRPs × 10 instances on 100 cells in
// headless Chromium (issue 24): time to the first meaningful paint (the instance table drawn with
// every instance counted), and the time a filter of the 10,000-row table takes to show its result.
// The cluster is a real server's store seeded directly (no containers: the page reads the API and
// the event stream, which cannot tell); cells are presences with a long TTL.
import { sql } from 'kysely';
import { chromium } from 'playwright-core';
import { buildApp, consolePlugin } from '../api/index.js';
import { openBbsStore } from '../bbs/index.js';

const lrps = Number(process.env.BENCH_LRPS ?? 1000);
const perLrp = Number(process.env.BENCH_INSTANCES ?? 10);
const cells = Number(process.env.BENCH_CELLS ?? 100);
const runs = Number(process.env.BENCH_RUNS ?? 5);

const store = await openBbsStore(':memory:');
for (let c = 0; c < cells; c++)
  await store.heartbeatCell({
    presence: {
      cell_id: `cell-${c}`,
      zone: `z${c % 3}`,
      capacity: { memory_mb: 65_536, disk_mb: 200_000, containers: 250 },
      rep_url: `http://127.0.0.1:1/cell-${c}`,
      placement_tags: [],
    },
    ttl_ms: 3_600_000,
  });
for (let i = 0; i < lrps; i++)
  await store.desireLRP({
    process_guid: `app-${String(i).padStart(4, '0')}`,
    domain: i % 4 === 0 ? `system-shop${i % 10}` : 'apps',
    instances: perLrp,
    image: 'bb:1',
    env: {},
    memory_mb: 64,
    disk_mb: 100,
    ports: [8080],
    routes: {},
    annotation: '',
    start_timeout_s: 60,
    placement_tags: [],
  });
// As bbs-seed.ts does: the reps' claim-and-start CAS per instance would take minutes; one UPDATE
// puts every instance where a real cluster's would be.
await sql`UPDATE actual_lrps SET state = 'RUNNING', cell_id = 'cell-' || (idx % ${sql.lit(cells)}),
  instance_guid = tag_epoch, address = '10.0.0.' || (idx % 250),
  ports = '[{"container_port":8080,"host_port":' || (61000 + idx) || '}]', tag_index = tag_index + 1
  WHERE state = 'UNCLAIMED'`.execute(store.backend.db);

const app = await buildApp({
  store,
  onEvents: (l) => store.onEvents(l),
  headEventId: () => store.headEventId(),
  plugins: [consolePlugin],
});
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-sync',
  ],
});
const total = lrps * perLrp;
const paints: number[] = [];
const filters: number[] = [];
let drawn = 0;
try {
  for (let run = 0; run < runs; run++) {
    const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
    const started = Date.now();
    await page.goto(`${url}/console/instances`);
    await page.waitForSelector(`#instance-count:has-text("${total} of ${total}")`, { timeout: 120_000 });
    paints.push(Date.now() - started);
    drawn = await page.$$eval('#instance-table tbody tr[data-key]', (rows) => rows.length);
    // One LRP's instances: the filter runs over every row, the table draws what is visible.
    const filterStarted = Date.now();
    await page.fill('#instance-filter', 'app-0777');
    await page.waitForSelector(`#instance-count:has-text("${perLrp} of ${total}")`);
    filters.push(Date.now() - filterStarted);
    await page.close();
  }
} finally {
  await browser.close();
  await app.close();
  await store.close();
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
console.log(`console page, ${lrps} LRPs × ${perLrp} instances on ${cells} cells, ${runs} loads (medians):`);
console.log(
  `  first meaningful paint (all ${total} instances counted, the table drawn): ${median(paints)} ms`,
);
console.log(`  rows in the DOM for ${total} instances: ${drawn} (virtual scrolling)`);
console.log(`  filter the instance table to one LRP: ${median(filters)} ms`);
