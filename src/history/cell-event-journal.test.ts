import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, fdatasyncSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CellEventJournal } from './cell-event-journal.js';
import type { IngestRecord } from './ingest-records.js';

const at = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s)).toISOString();
const observe = (j: CellEventJournal, id: string, event: string, s: number) =>
  j.record({ container_id: id, event, external_timestamp: at(s), entity_type: 'event' });

/** Lines in the journal's segments now. */
function lineCount(dir: string): number {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.jsonl'))
    .reduce((sum, name) => sum + readFileSync(join(dir, name), 'utf8').split('\n').length - 1, 0);
}

describe('CellEventJournal', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-journal-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('delivers records in order, in batches, and removes them once acknowledged', async () => {
    const journal = new CellEventJournal({ dir, maxBatch: 2 });
    for (const [i, e] of ['create', 'start', 'die'].entries()) observe(journal, 'c1', e, i);
    const batches: IngestRecord[][] = [];
    assert.equal(
      await journal.deliverOnce(async (b) => {
        batches.push([...b]);
      }),
      3,
    );
    assert.deepEqual(
      batches.map((b) => b.map((r) => (r.type === 'event' ? r.event : r.type))),
      [['create', 'start'], ['die']],
    );
    assert.deepEqual(journal.pending(), []);
    assert.equal(lineCount(dir), 0, 'the acknowledged lines are gone from the segment');
    // The emptied segment takes the next records, which are delivered alone.
    observe(journal, 'c1', 'destroy', 3);
    const next: IngestRecord[] = [];
    assert.equal(await journal.deliverOnce(async (b) => void next.push(...b)), 1);
    assert.deepEqual(
      next.map((r) => (r.type === 'event' ? r.event : r.type)),
      ['destroy'],
    );
    assert.equal(readdirSync(dir).length, 1, 'one segment for the life of the journal');
    journal.close();
  });

  it('makes a burst of records durable with one sync for all written while one ran, off the event loop', async () => {
    /** Each sync as [lines in the file when it started, when it ended]. */
    const syncs: { started: number; ended?: number }[] = [];
    let release = () => {};
    const journal = new CellEventJournal({
      dir,
      syncData: async (fd) => {
        const sync: { started: number; ended?: number } = { started: lineCount(dir) };
        syncs.push(sync);
        // The first sync is held until the burst is written: the rest must wait for it and share one.
        if (syncs.length === 1) await new Promise<void>((resolve) => (release = resolve));
        fdatasyncSync(fd);
        sync.ended = lineCount(dir);
      },
    });
    for (let i = 0; i < 100; i++) observe(journal, 'c1', `e${i}`, i);
    assert.equal(syncs.length, 1, 'the first record started a sync; the next 99 wait for it');
    release();
    const posted: IngestRecord[] = [];
    assert.equal(await journal.deliverOnce(async (b) => void posted.push(...b)), 100);
    assert.equal(syncs.length, 2, 'one more sync covered the 99 written while the first ran');
    assert.equal(syncs[1]?.started, 100, 'it started with every line written');
    journal.close();
  });

  it('keeps what the server did not acknowledge, with the original external timestamps', async () => {
    const journal = new CellEventJournal({ dir, maxBatch: 1 });
    observe(journal, 'c1', 'start', 1);
    observe(journal, 'c1', 'die', 2);
    let calls = 0;
    await assert.rejects(
      journal.deliverOnce(async () => {
        if (++calls === 2) throw new Error('ECONNREFUSED');
      }),
      /ECONNREFUSED/,
    );
    // The first batch was acknowledged, the second not: it stays, with its own timestamp.
    const left = journal.pending();
    assert.deepEqual(
      left.map((r) => (r.type === 'event' ? [r.event, r.external_timestamp] : [])),
      [['die', at(2)]],
    );
    // The next delivery sends it, and nothing acknowledged before.
    const again: IngestRecord[] = [];
    assert.equal(await journal.deliverOnce(async (b) => void again.push(...b)), 1);
    assert.deepEqual(
      again.map((r) => (r.type === 'event' ? r.event : r.type)),
      ['die'],
    );
    journal.close();
  });

  it('keeps a record written while a delivery posts, and sends it with the next', async () => {
    const journal = new CellEventJournal({ dir });
    observe(journal, 'c1', 'start', 1);
    const first: IngestRecord[] = [];
    await journal.deliverOnce(async (b) => {
      first.push(...b);
      // The container dies while its start is on the wire.
      observe(journal, 'c1', 'die', 2);
    });
    assert.deepEqual(
      first.map((r) => (r.type === 'event' ? r.event : r.type)),
      ['start'],
    );
    assert.deepEqual(
      journal.pending().map((r) => (r.type === 'event' ? r.event : r.type)),
      ['die'],
      'the segment was not emptied under the new line',
    );
    const second: IngestRecord[] = [];
    assert.equal(await journal.deliverOnce(async (b) => void second.push(...b)), 1);
    assert.deepEqual(
      second.map((r) => (r.type === 'event' ? r.event : r.type)),
      ['die'],
    );
    assert.equal(lineCount(dir), 0);
    journal.close();
  });

  it('delivers a backlog larger than one read (1 MiB) in order, each record once', async () => {
    const journal = new CellEventJournal({ dir });
    const message = 'x'.repeat(300);
    for (let i = 0; i < 5_000; i++)
      journal.record({
        container_id: `c${i}`,
        event: 'die',
        external_timestamp: at(0),
        message,
        entity_type: 'event',
      });
    const ids: string[] = [];
    assert.equal(
      await journal.deliverOnce(async (b) => {
        for (const r of b) if (r.type === 'event') ids.push(r.container_id);
      }),
      5_000,
    );
    assert.deepEqual(
      ids,
      Array.from({ length: 5_000 }, (_, i) => `c${i}`),
    );
    assert.deepEqual(journal.pending(), []);
    journal.close();
  });

  it('after a restart mid-delivery, the next process sends every record not acknowledged', async () => {
    const first = new CellEventJournal({ dir, maxBatch: 1 });
    for (const [i, e] of ['create', 'start', 'die'].entries()) observe(first, 'c1', e, i);
    let posts = 0;
    await assert.rejects(
      first.deliverOnce(async () => {
        if (++posts === 2) throw new Error('server gone');
      }),
      /server gone/,
    );
    first.close();
    const second = new CellEventJournal({ dir });
    const seen: string[] = [];
    await second.deliverOnce(async (b) => {
      for (const r of b) if (r.type === 'event') seen.push(r.event);
    });
    // `create` was acknowledged: sent again is allowed (the server dedupes), lost is not.
    assert.deepEqual(
      seen.filter((e) => e !== 'create'),
      ['start', 'die'],
    );
    assert.deepEqual(second.pending(), []);
    second.close();
  });

  it('kill -9 mid-delivery: the next journal on the dir delivers every record not acknowledged', async () => {
    // A process journals 200 records and delivers them 50 a post: the first post is acknowledged,
    // the second never answers, and the process is killed with -9 while it waits.
    const moduleUrl = new URL('./cell-event-journal.js', import.meta.url).href;
    const script = `
      const { CellEventJournal } = await import(${JSON.stringify(moduleUrl)});
      const journal = new CellEventJournal({ dir: ${JSON.stringify(dir)}, maxBatch: 50 });
      for (let i = 0; i < 200; i++)
        journal.record({ container_id: 'c' + i, event: 'die', external_timestamp: new Date(0).toISOString(), entity_type: 'event' });
      let posts = 0;
      await journal.deliverOnce(async (batch) => {
        if (++posts === 1) return void process.stdout.write('acked ' + batch.map((r) => r.container_id).join(',') + '\\n');
        process.stdout.write('waiting\\n');
        await new Promise(() => {});
      });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('waiting')) resolve();
      });
      child.once('exit', (code) =>
        reject(new Error(`the journaling process exited (${code}) before its second post`)),
      );
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const acked = new Set(/acked (\S+)/.exec(out)?.[1]?.split(','));
    assert.equal(acked.size, 50);
    const next = new CellEventJournal({ dir });
    const delivered = new Set<string>();
    await next.deliverOnce(async (b) => {
      for (const r of b) if (r.type === 'event') delivered.add(r.container_id);
    });
    const lost = Array.from({ length: 200 }, (_, i) => `c${i}`).filter(
      (id) => !acked.has(id) && !delivered.has(id),
    );
    assert.deepEqual(lost, []);
    assert.deepEqual(next.pending(), []);
    next.close();
  });

  it('survives a restart: a new journal on the same dir delivers what the old one kept', async () => {
    const first = new CellEventJournal({ dir });
    observe(first, 'c1', 'start', 1);
    first.close();
    const second = new CellEventJournal({ dir });
    observe(second, 'c1', 'die', 2);
    const seen: string[] = [];
    await second.deliverOnce(async (b) => {
      for (const r of b) if (r.type === 'event') seen.push(r.event);
    });
    assert.deepEqual(seen, ['start', 'die']);
    second.close();
  });

  it('skips a torn last line left by a crash mid-append', async () => {
    const journal = new CellEventJournal({ dir });
    observe(journal, 'c1', 'start', 1);
    journal.close();
    const segment = readdirSync(dir)[0]!;
    appendFileSync(join(dir, segment), '{"type":"event","contai');
    const reopened = new CellEventJournal({ dir });
    assert.equal(reopened.pending().length, 1);
    reopened.close();
  });

  it('the delivery loop retries with back-off while the server is down, then delivers', async () => {
    const journal = new CellEventJournal({ dir });
    observe(journal, 'c1', 'start', 1);
    const controller = new AbortController();
    const delays: number[] = [];
    const delivered: IngestRecord[] = [];
    let failures = 3;
    const loop = journal.runDelivery({
      signal: controller.signal,
      random: () => 0,
      backoff: { initialMs: 10, capMs: 1000, jitter: true },
      onError: (_err, retryInMs) => delays.push(retryInMs),
      post: async (batch) => {
        if (failures-- > 0) throw new Error('server unreachable');
        delivered.push(...batch);
      },
    });
    while (delivered.length < 1) await new Promise((r) => setTimeout(r, 5));
    // Woken by the next record: no polling delay.
    observe(journal, 'c1', 'die', 2);
    while (delivered.length < 2) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    await loop;
    assert.deepEqual(delays, [5, 10, 20]);
    assert.deepEqual(
      delivered.map((r) => (r.type === 'event' ? r.event : '')),
      ['start', 'die'],
    );
    assert.deepEqual(journal.pending(), []);
    journal.close();
  });
});
