import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import type { ActualLRPPageKey, BbsStore, ListPage } from '../bbs/index.js';
import { BerthError } from '../core/index.js';
import { desiredDefinition } from './bbs-fixtures.js';

/**
 * Keyset paging of the store's lists (`limit` + `after`), part of the BBS contract: every backend
 * and the HTTP client walk a list in key order, each record exactly once, also while records are
 * inserted between pages. Each case works in its own domain of the shared store.
 */
export function describeBbsPagingContract(storeOf: () => BbsStore): void {
  const domainOf = () => `page-${randomUUID().slice(0, 8)}`;

  /** Walks a list page by page; `during` runs between pages (inserts racing the walk). */
  async function walk<T, K>(
    list: (page: ListPage<K>) => Promise<T[]>,
    keyOf: (record: T) => K,
    limit: number,
    during?: (page: number) => Promise<void>,
  ): Promise<T[]> {
    const seen: T[] = [];
    let after: K | undefined;
    for (let page = 0; page < 1000; page++) {
      const rows = await list({ limit, ...(after !== undefined ? { after } : {}) });
      assert.ok(rows.length <= limit, `a page holds at most limit (${limit}) records, got ${rows.length}`);
      seen.push(...rows);
      if (rows.length < limit) return seen;
      after = keyOf(rows.at(-1)!);
      await during?.(page);
    }
    assert.fail('the walk did not end');
  }

  it('pages DesiredLRPs in process_guid order, each exactly once while others are inserted', async () => {
    const store = storeOf();
    const domain = domainOf();
    const initial = ['b', 'd', 'f', 'h', 'j', 'l', 'n'].map((p) => `${domain}-${p}`);
    for (const guid of initial) await store.desireLRP(desiredDefinition(guid, 0, { domain }));
    // Between pages: one new LRP before the cursor and one after it.
    const inserted: string[] = [];
    const seen = await walk(
      (page: ListPage<string>) => store.listDesiredLRPs({ domain, ...page }),
      (d) => d.process_guid,
      3,
      async (page) => {
        for (const guid of [`${domain}-a${page}`, `${domain}-z${page}`]) {
          await store.desireLRP(desiredDefinition(guid, 0, { domain }));
          inserted.push(guid);
        }
      },
    );
    const guids = seen.map((d) => d.process_guid);
    assert.deepEqual(guids, [...guids].sort(), 'key order');
    assert.equal(new Set(guids).size, guids.length, 'no record twice');
    for (const guid of initial) assert.ok(guids.includes(guid), `${guid} was there all along and is seen`);
    // Those inserted behind the cursor appear on the next walk, not this one.
    const all = await store.listDesiredLRPs({ domain });
    assert.equal(all.length, initial.length + inserted.length);
  });

  it('pages ActualLRPs by (process_guid, index, evacuating)', async () => {
    const store = storeOf();
    const domain = domainOf();
    await store.desireLRP(desiredDefinition(`${domain}-a`, 3, { domain }));
    await store.desireLRP(desiredDefinition(`${domain}-b`, 2, { domain }));
    const keyOf = (a: { process_guid: string; index: number; evacuating?: boolean }): ActualLRPPageKey => ({
      process_guid: a.process_guid,
      index: a.index,
      evacuating: a.evacuating === true,
    });
    const seen = await walk((page) => store.listActualLRPs({ domain, ...page }), keyOf, 2);
    assert.deepEqual(
      seen.map((a) => `${a.process_guid.slice(-1)}${a.index}`),
      ['a0', 'a1', 'a2', 'b0', 'b1'],
    );
    // Strictly after a key in the middle of one LRP's indices.
    const rest = await store.listActualLRPs({
      domain,
      after: { process_guid: `${domain}-a`, index: 1, evacuating: false },
    });
    assert.deepEqual(
      rest.map((a) => `${a.process_guid.slice(-1)}${a.index}`),
      ['a2', 'b0', 'b1'],
    );
  });

  it('pages tasks in task_guid order', async () => {
    const store = storeOf();
    const domain = domainOf();
    for (const n of [5, 1, 4, 2, 3]) {
      await store.desireTask({
        task_guid: `${domain}-${n}`,
        domain,
        image: 'busybox',
        env: {},
        memory_mb: 0,
        disk_mb: 0,
        result_file: '',
        completion_callback_url: '',
        placement_tags: [],
      });
    }
    const seen = await walk(
      (page: ListPage<string>) => store.listTasks({ domain, ...page }),
      (t) => t.task_guid,
      2,
    );
    assert.deepEqual(
      seen.map((t) => t.task_guid.slice(-1)),
      ['1', '2', '3', '4', '5'],
    );
  });

  it('refuses a page size that is not a positive integer, naming limit', async () => {
    const store = storeOf();
    for (const limit of [0, -1, 1.5]) {
      await assert.rejects(store.listDesiredLRPs({ limit }), (err: unknown) => {
        assert.ok(err instanceof BerthError, String(err));
        assert.equal(err.code, 'invalid_argument');
        assert.match(err.message, /limit/);
        return true;
      });
    }
  });
}
