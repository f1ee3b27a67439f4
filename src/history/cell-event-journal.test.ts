import assert from 'node:assert/strict';
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
    assert.deepEqual(readdirSync(dir), []);
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
    // The segment was not fully acknowledged: it stays, and is delivered again whole (dedupe on the server).
    const left = journal.pending();
    assert.deepEqual(
      left.map((r) => (r.type === 'event' ? [r.event, r.external_timestamp] : [])),
      [
        ['start', at(1)],
        ['die', at(2)],
      ],
    );
    journal.close();
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
