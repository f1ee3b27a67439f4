/**
 * `npm run bench model-destroy [UNITS] [BATCH]`: destroying a service of UNITS (default 100,000)
 * units on the in-memory model runner, model only (no containers). The units sit on 100 cells and
 * are all in scope of a relation with a one-unit `db` service, so each one leaves a scope, goes
 * Dead and is removed by its cell's agent; the `service-dying` cleanup makes them Dying BATCH
 * (default 500) per transaction. Prints total time, transactions, the largest one, peak RSS.
 */
import { destroyService, MemoryModelTxnRunner, relationId, settleModel, unitName } from '../model/index.js';
import { ModelBuilder } from '../testing/model-builder.js';
import { fmt } from './bench-util.js';

const units = Number(process.argv[2] ?? 100_000);
const batchSize = Number(process.argv[3] ?? 500);
const now = new Date('2024-05-01T12:00:00.000Z');

const runner = new MemoryModelTxnRunner();
const m = new ModelBuilder(runner);
const cells = Array.from({ length: 100 }, (_, i) => `cell-${i}`);
for (const c of cells) m.cell(c);
m.service('big')
  .service('db')
  .units('db', 1, cells)
  .relate('big', 'db')
  .enter('big', 'db', unitName('db', 0));
const buildStart = process.hrtime.bigint();
m.units('big', units, cells);
for (let i = 0; i < units; i++) m.enter('big', 'db', unitName('big', i));
const buildMs = Number(process.hrtime.bigint() - buildStart) / 1e6;
const built = runner.stats().txns;
runner.resetStats();
const rssBefore = process.memoryUsage().rss;

const start = process.hrtime.bigint();
m.apply((v) => destroyService(v, 'big', now));
const report = await settleModel(runner, { now, batchSize });
const ms = Number(process.hrtime.bigint() - start) / 1e6;
// The kernel's high-water mark for the whole process (build included), in KiB.
const peakRss = process.resourceUsage().maxRSS * 1024;
const after = runner.stats();
if (m.view.service('big') !== undefined || m.view.relation(relationId('big', 'db')) !== undefined) {
  throw new Error('the service or its relation survived');
}
if (report.errors.length > 0) throw new Error(`errors: ${report.errors.length}`);
const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MiB`;
console.log(`model-destroy: ${units} units on ${cells.length} cells, batch ${batchSize}`);
console.log(`build (rules, ${built} txns)   ${fmt(buildMs)}`);
console.log(`destroy → all removed         ${fmt(ms)}  (${report.passes} settle passes)`);
console.log(`transactions                  ${after.txns} (${after.aborted} aborted and rebuilt)`);
console.log(
  `largest transaction           ${after.largest_txn_size} asserts+ops (${after.largest_txn_rule})`,
);
console.log(`RSS before destroy / peak    ${mb(rssBefore)} / ${mb(peakRss)}`);
