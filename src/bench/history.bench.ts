import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp, createHistoryServerParts } from '../api/index.js';
import { openBbsStore } from '../bbs/index.js';
import { CellEventJournal, HistoryClient, type IngestRecord } from '../history/index.js';
import { benchBackends } from './bbs-bench-backends.js';

/**
 * Issue 6's two numbers. Ingest: history items recorded per second through HistoryStore.ingest in
 * batches (one transaction each), as cells deliver their journals; goal ≥ 5,000/s on both backends.
 * Propagation: from `journal.record` on a cell to the item visible in `GET /v1/containers/{id}`
 * of a real listening server (fsync, HTTP POST, commit, HTTP GET); goal: median under 200 ms.
 */
const raws = ['create', 'start', 'health_status', 'die', 'destroy'];
const at = (ms: number) => new Date(Date.UTC(2024, 0, 1) + ms).toISOString();

async function ingestBench(): Promise<void> {
  const total = Number(process.env.HISTORY_BENCH_ITEMS ?? 50_000);
  const batchSize = 500;
  for (const backend of await benchBackends()) {
    const bbs = await openBbsStore(backend.db);
    const parts = await createHistoryServerParts(bbs, { auth: 'none' });
    try {
      const batches: IngestRecord[][] = [];
      let n = 0;
      for (let b = 0; n < total; b++) {
        const batch: IngestRecord[] = [];
        // 100 containers per batch, each gets 5 events: a cell's journal after a busy second.
        for (let i = 0; i < batchSize && n < total; i++, n++) {
          const container = `bench-${b}-${i % 100}`;
          batch.push({
            type: 'event',
            container_id: container,
            event: raws[Math.floor(i / 100) % raws.length]!,
            external_timestamp: at(n),
            entity_type: 'event',
          });
        }
        batches.push(batch);
      }
      const started = process.hrtime.bigint();
      let recorded = 0;
      for (const batch of batches) recorded += (await parts.history.ingest(batch)).recorded;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // Re-delivery of everything: all duplicates, nothing recorded twice.
      const again = await parts.history.ingest(batches[0]!);
      process.stdout.write(
        `ingest ${backend.name}: ${recorded} items in ${seconds.toFixed(2)} s = ${Math.round(recorded / seconds)} items/s (batch ${batchSize}); re-delivered batch: ${again.recorded} recorded, ${again.duplicates} duplicates\n`,
      );
    } finally {
      await bbs.close();
      await backend.cleanup();
    }
  }
}

async function propagationBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-hist-prop-'));
  const bbs = await openBbsStore(join(dir, 'bbs.sqlite3'));
  const parts = await createHistoryServerParts(bbs, { auth: 'tokens', dataDir: dir });
  const app = await buildApp({ store: bbs, auth: parts.auth, plugins: [parts.plugin] });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const client = new HistoryClient(url, { token: parts.adminToken! });
  const journal = new CellEventJournal({ dir: join(dir, 'journal') });
  const controller = new AbortController();
  const loop = journal.runDelivery({
    signal: controller.signal,
    post: async (batch) => void (await client.ingest(batch)),
  });
  const runs = Number(process.env.HISTORY_BENCH_RUNS ?? 50);
  const times: number[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const id = `prop-${i}`;
      const started = process.hrtime.bigint();
      journal.record({
        container_id: id,
        event: 'die',
        external_timestamp: new Date().toISOString(),
        exit_code: 1,
        entity_type: 'event',
      });
      for (;;) {
        try {
          const c = await client.getContainer(id);
          if (c.status === 'die') break;
        } catch {
          // not there yet (404)
        }
        await new Promise((r) => setTimeout(r, 1));
      }
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  } finally {
    controller.abort();
    await loop;
    journal.close();
    await app.close();
    await bbs.close();
    rmSync(dir, { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  const pct = (p: number) => times[Math.min(times.length - 1, Math.floor(times.length * p))]!;
  process.stdout.write(
    `propagation (journal.record → visible in GET /v1/containers/{id}, SQLite, token auth): median ${pct(0.5).toFixed(1)} ms, p90 ${pct(0.9).toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms over ${runs} runs (goal: median < 200 ms)\n`,
  );
}

/**
 * What the journal costs a cell: records written a few at a time (the event loop turning between
 * them, as container events come), each made durable and delivered to a server that answers in
 * 2 ms. The CPU is the process's, libuv's threads (fdatasync) included.
 */
async function journalBench(): Promise<void> {
  const records = Number(process.env.HISTORY_BENCH_JOURNAL_RECORDS ?? 3_000);
  const dir = mkdtempSync(join(tmpdir(), 'berth-hist-journal-'));
  const journal = new CellEventJournal({ dir });
  const controller = new AbortController();
  let delivered = 0;
  let posts = 0;
  const loop = journal.runDelivery({
    signal: controller.signal,
    post: async (batch) => {
      await new Promise((r) => setTimeout(r, 2));
      delivered += batch.length;
      posts++;
    },
  });
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  try {
    for (let i = 0; i < records; i++) {
      journal.record({
        container_id: `journal-${i % 20}`,
        event: raws[i % raws.length]!,
        external_timestamp: new Date().toISOString(),
        entity_type: 'event',
      });
      if (i % 3 === 2) await new Promise((r) => setTimeout(r, 1));
    }
    while (delivered < records) await new Promise((r) => setTimeout(r, 1));
  } finally {
    controller.abort();
    await loop;
    journal.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const cpu = process.cpuUsage(cpuBefore);
  const wallMs = performance.now() - started;
  process.stdout.write(
    `journal (record → durable → delivered, ${records} records in ${posts} posts, ${wallMs.toFixed(0)} ms): ${((cpu.user + cpu.system) / records).toFixed(0)} µs of CPU a record (user ${(cpu.user / records).toFixed(0)}, system ${(cpu.system / records).toFixed(0)})\n`,
  );
}

await ingestBench();
await propagationBench();
await journalBench();
