import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { SqlBbsStore } from '../bbs/index.js';
import { BerthError } from '../core/index.js';
import {
  type ContainerLaunch,
  type ContainerStatusEvent,
  containerEventType,
  type HistoryStore,
  type IngestRecord,
  WebhookSubscriptions,
} from '../history/index.js';
import { type FakeClock, fakeClock } from './bbs-store-contract.js';

export interface HistoryContractTarget {
  readonly history: HistoryStore;
  readonly bbs: SqlBbsStore;
  close(): Promise<void>;
}

const at = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s)).toISOString();

export function launchOf(id: string, extra: Partial<ContainerLaunch> = {}): ContainerLaunch {
  return {
    id,
    image: 'busybox',
    command: ['sh', '-c', 'exit 0'],
    env_names: ['PATH', 'SECRET'],
    cell_id: 'cell-1',
    owner_kind: 'lrp',
    owner_id: 'web/0',
    system: null,
    ...extra,
  };
}

export function event(
  id: string,
  raw: string,
  second: number,
  extra: Partial<IngestRecord> = {},
): IngestRecord {
  return {
    type: 'event',
    container_id: id,
    event: raw,
    external_timestamp: at(second),
    entity_type: 'event',
    ...extra,
  } as IngestRecord;
}

/** The HistoryStore contract: the same cases on SQLite and on a real PostgreSQL. */
export function describeHistoryStoreContract(
  name: string,
  open: (clock: FakeClock) => Promise<HistoryContractTarget>,
  skip?: string,
): void {
  describe(`HistoryStore contract: ${name}`, { skip: skip ?? false }, () => {
    const clock = fakeClock(Date.UTC(2024, 0, 1, 0, 1, 0));
    let target: HistoryContractTarget;
    let history: HistoryStore;
    before(async () => {
      target = await open(clock);
      history = target.history;
    });
    after(async () => {
      await target?.close();
    });
    const cid = (prefix = 'c') => `${prefix}-${randomUUID().slice(0, 8)}`;

    it('records a launch and mapped events, and the status follows the newest', async () => {
      const id = cid();
      const result = await history.ingest([
        { type: 'launch', container: launchOf(id), external_timestamp: at(1) },
        event(id, 'start', 2),
      ]);
      assert.deepEqual(result, { recorded: 2, duplicates: 0 });
      const c = await history.getContainer(id);
      assert.equal(c.status, 'Running');
      assert.equal(c.status_time, clock.now().toISOString());
      assert.deepEqual(c.command, ['sh', '-c', 'exit 0']);
      assert.deepEqual(c.env_names, ['PATH', 'SECRET']);
      assert.deepEqual(
        c.history.map((h) => [h.status, h.entity_type, h.external_timestamp]),
        [
          ['Created', 'system', at(1)],
          ['Running', 'event', at(2)],
        ],
      );
      assert.equal(c.history[0]!.message, 'Launched on cell cell-1');
      assert.equal(c.history[1]!.message, null);
      assert.equal(c.history[1]!.entity_id, null);
    });

    it('records a repeated event once (same status, message, external timestamp)', async () => {
      const id = cid();
      const batch = [event(id, 'start', 2), event(id, 'die', 3, { exit_code: 1 })];
      assert.deepEqual(await history.ingest(batch), { recorded: 2, duplicates: 0 });
      assert.deepEqual(await history.ingest(batch), { recorded: 0, duplicates: 2 });
      assert.deepEqual(await history.ingest([...batch, ...batch]), { recorded: 0, duplicates: 2 });
      // Same instant spelled differently is the same event.
      assert.deepEqual(
        await history.ingest([event(id, 'start', 0, { external_timestamp: '2024-01-01T01:00:02+01:00' })]),
        { recorded: 0, duplicates: 1 },
      );
      const c = await history.getContainer(id);
      assert.equal(c.history.length, 2);
      assert.equal(c.status, 'die');
      assert.equal(c.history[1]!.exit_code, 1);
    });

    it('a terminal status is replaced only by a newer terminal one', async () => {
      const id = cid();
      await history.ingest([event(id, 'start', 1), event(id, 'kill', 2)]);
      assert.equal((await history.getContainer(id)).status, 'Killed');
      await history.ingest([event(id, 'destroy', 3)]);
      assert.equal((await history.getContainer(id)).status, 'Killed');
      await history.ingest([event(id, 'oom', 4)]);
      assert.equal((await history.getContainer(id)).status, 'Killed (Out of Memory)');
    });

    it('an item delivered late (older than what is recorded) refolds the history', async () => {
      const id = cid();
      await history.ingest([event(id, 'start', 5)]);
      await history.ingest([
        {
          type: 'item',
          container_id: id,
          status: 'Failed',
          entity_type: 'service',
          external_timestamp: at(4),
        },
      ]);
      const c = await history.getContainer(id);
      assert.equal(c.status, 'Failed');
      assert.deepEqual(
        c.history.map((h) => h.status),
        ['Failed', 'Running'],
      );
      await history.ingest([event(id, 'create', 1)]);
      assert.equal((await history.getContainer(id)).status, 'Failed');
    });

    it('finalization stores logs (capped), outputs, exit code and sets Complete', async () => {
      const id = cid();
      await history.ingest([
        { type: 'launch', container: launchOf(id), external_timestamp: at(1) },
        event(id, 'start', 2),
        event(id, 'die', 3, { exit_code: 0 }),
        {
          type: 'finalization',
          container_id: id,
          exit_code: 0,
          logs: 'x'.repeat(10) + 'hello\n',
          logs_size: 16,
          logs_truncated: false,
          outputs: [{ name: 'result', path: '/out/result.txt', size: 2, content: '42' }],
          error: null,
        },
      ]);
      const c = await history.getContainer(id);
      assert.equal(c.status, 'Complete');
      assert.equal(c.exit_code, 0);
      assert.ok(c.finalized_at);
      assert.deepEqual(c.outputs, [{ name: 'result', path: '/out/result.txt', size: 2, content: '42' }]);
      const last = c.history.at(-1)!;
      assert.deepEqual(
        [last.status, last.entity_type, last.exit_code, last.message],
        ['Complete', 'system', 0, null],
      );
      const logs = await history.getLogs(id);
      assert.equal(logs.text, 'hello\n', 'capped to the last 6 characters by the suite store');
      assert.equal(logs.truncated, true);
      assert.equal(logs.size, 16);
      // A re-delivered finalization changes nothing.
      await history.ingest([
        {
          type: 'finalization',
          container_id: id,
          exit_code: 3,
          logs: '',
          logs_size: 0,
          logs_truncated: false,
          outputs: [],
          error: null,
        },
      ]);
      const again = await history.getContainer(id);
      assert.equal(again.history.length, c.history.length);
      assert.equal(again.exit_code, 0);
    });

    it('finalization with a non-zero exit is Failed; a failed finalization says why', async () => {
      const failed = cid();
      await history.ingest([
        event(failed, 'die', 3, { exit_code: 2 }),
        {
          type: 'finalization',
          container_id: failed,
          exit_code: 2,
          logs: '',
          logs_size: 0,
          logs_truncated: false,
          outputs: [],
          error: null,
        },
      ]);
      assert.equal((await history.getContainer(failed)).status, 'Failed');
      const broken = cid();
      await history.ingest([
        event(broken, 'die', 3, { exit_code: 0 }),
        {
          type: 'finalization',
          container_id: broken,
          exit_code: 0,
          logs: '',
          logs_size: 0,
          logs_truncated: false,
          outputs: [],
          error: 'cannot read output "result": ENOENT',
        },
      ]);
      const c = await history.getContainer(broken);
      assert.equal(c.status, 'Failed');
      assert.equal(c.history.at(-1)!.message, 'Finalization failed: cannot read output "result": ENOENT');
      assert.equal(c.history.at(-1)!.entity_type, 'system');
    });

    it('user actions carry the user id', async () => {
      const id = cid();
      await history.ingest([
        {
          type: 'launch',
          container: launchOf(id),
          external_timestamp: at(1),
          entity_type: 'user',
          entity_id: 'u-alice',
        },
        {
          type: 'item',
          container_id: id,
          status: 'Killed',
          entity_type: 'user',
          entity_id: 'u-bob',
          external_timestamp: at(5),
        },
      ]);
      const c = await history.getContainer(id);
      assert.deepEqual(
        c.history.map((h) => [h.status, h.entity_type, h.entity_id]),
        [
          ['Created', 'user', 'u-alice'],
          ['Killed', 'user', 'u-bob'],
        ],
      );
    });

    it('lists containers by status, system and since, newest first, in cursor pages', async () => {
      const system = `sys-${randomUUID().slice(0, 6)}`;
      const ids = [cid('p'), cid('p'), cid('p'), cid('p'), cid('p')];
      for (const id of ids) {
        await history.ingest([
          {
            type: 'launch',
            container: launchOf(id, { system, owner_kind: 'system' }),
            external_timestamp: at(1),
          },
        ]);
      }
      await history.ingest([event(ids[1]!, 'start', 2)]);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await history.listContainers({ system, limit: 2, ...(cursor ? { cursor } : {}) });
        seen.push(...page.containers.map((c) => c.id));
        cursor = page.next_cursor;
        pages++;
      } while (cursor);
      assert.deepEqual(seen, [...ids].reverse());
      assert.equal(pages, 3);
      const running = await history.listContainers({ system, status: 'Running' });
      assert.deepEqual(
        running.containers.map((c) => c.id),
        [ids[1]],
      );
      clock.advance(60_000);
      const later = clock.now().toISOString();
      await history.ingest([event(ids[3]!, 'start', 9)]);
      const since = await history.listContainers({ system, since: later });
      assert.deepEqual(
        since.containers.map((c) => c.id),
        [ids[3]],
      );
    });

    it('bad input is invalid_argument; an unknown container is not_found', async () => {
      await assert.rejects(history.getContainer('nope-never'), (err: BerthError) => err.code === 'not_found');
      await assert.rejects(
        history.listContainers({ cursor: 'x' }),
        (err: BerthError) => err.code === 'invalid_argument',
      );
      await assert.rejects(
        history.listContainers({ since: 'yesterday' }),
        (err: BerthError) => err.code === 'invalid_argument',
      );
      await assert.rejects(
        history.ingest([event('', 'start', 1)]),
        (err: BerthError) => err instanceof BerthError && err.code === 'invalid_argument',
      );
      await assert.rejects(
        history.ingest([event('c-x', 'start', 1, { external_timestamp: 'soon' })]),
        (err: BerthError) => err.code === 'invalid_argument',
      );
    });

    it('every new item is an event on the BBS event log, in the same commit', async () => {
      const before = (await target.bbs.readEvents({ limit: 10_000 })).at(-1)?.id;
      const id = cid();
      await history.ingest([event(id, 'start', 1), event(id, 'die', 2, { exit_code: 1 })]);
      await history.ingest([event(id, 'start', 1)]);
      const events = (await target.bbs.readEvents({
        ...(before ? { after: before } : {}),
        limit: 10_000,
      })) as unknown as (ContainerStatusEvent & { id: string })[];
      const mine = events.filter((e) => e.type === containerEventType && e.container.id === id);
      assert.deepEqual(
        mine.map((e) => [e.item.status, e.container.status]),
        [
          ['Running', 'Running'],
          ['die', 'die'],
        ],
      );
    });

    it("a recorded item wakes the BBS's event subscribers once committed, not at their next poll", async () => {
      // The hook SSE streams and the callback worker wait on: history's inserts go through the same
      // event writer as the BBS's own mutations, so they fire it too. What the listener reads at the
      // moment it is called must already hold the event (it fires after the commit).
      const before = (await target.bbs.readEvents({ limit: 10_000 })).at(-1)?.id;
      const id = cid();
      const seenAtWake: Promise<string[]>[] = [];
      const unsubscribe = target.bbs.onEvents(() => {
        seenAtWake.push(
          target.bbs
            .readEvents({ ...(before ? { after: before } : {}), limit: 10_000 })
            .then((events) =>
              (events as unknown as ContainerStatusEvent[])
                .filter((e) => e.type === containerEventType && e.container.id === id)
                .map((e) => e.item.status),
            ),
        );
      });
      try {
        await history.ingest([event(id, 'start', 1)]);
        assert.equal(seenAtWake.length, 1, 'one wake-up per committed ingest');
        assert.deepEqual(await seenAtWake[0], ['Running']);
        // A re-delivered batch records nothing, so it wakes nobody.
        await history.ingest([event(id, 'start', 1)]);
        assert.equal(seenAtWake.length, 1);
      } finally {
        unsubscribe();
      }
    });

    it("one ingest of 450 containers (three statements' worth) records each one's own launch, status and end", async () => {
      const known = cid('known');
      await history.ingest([
        { type: 'launch', container: launchOf(known, { image: 'old' }), external_timestamp: at(1) },
      ]);
      const ids = Array.from({ length: 449 }, (_, i) => cid(`many${i}`));
      const records: IngestRecord[] = [
        {
          type: 'launch',
          container: launchOf(known, { image: 'relaunched', cell_id: 'cell-9' }),
          external_timestamp: at(2),
        },
        event(known, 'start', 3),
      ];
      ids.forEach((id, i) => {
        if (i % 3 === 0)
          records.push({
            type: 'launch',
            container: launchOf(id, { image: `img-${i}` }),
            external_timestamp: at(1),
          });
        records.push(event(id, 'start', 2));
        if (i % 3 === 1) records.push(event(id, 'die', 3, { exit_code: 0 }));
        if (i % 3 === 2) {
          records.push(event(id, 'die', 3, { exit_code: 4 }), {
            type: 'finalization',
            container_id: id,
            exit_code: 4,
            // Short: the suite's store keeps only the last 6 characters.
            logs: `${i}`,
            logs_size: `${i}`.length,
            logs_truncated: false,
            outputs: [],
            error: null,
          });
        }
      });
      const result = await history.ingest(records);
      assert.equal(result.duplicates, 0);
      const relaunched = await history.getContainer(known);
      assert.deepEqual(
        [relaunched.image, relaunched.cell_id, relaunched.status],
        ['relaunched', 'cell-9', 'Running'],
      );
      for (const [i, id] of ids.entries()) {
        if (i % 20 !== 0 && i < ids.length - 3) continue;
        const c = await history.getContainer(id);
        if (i % 3 === 0)
          assert.deepEqual([c.image, c.status, c.exit_code], [`img-${i}`, 'Running', null], id);
        if (i % 3 === 1) assert.deepEqual([c.image, c.status], ['', 'die'], id);
        if (i % 3 === 2) {
          assert.deepEqual([c.status, c.exit_code, Boolean(c.finalized_at)], ['Failed', 4, true], id);
          assert.equal((await history.getLogs(id)).text, `${i}`, id);
        }
      }
    });

    it('concurrent ingests for one container end in the folded status', async () => {
      const id = cid();
      const raws = ['create', 'start', 'die', 'destroy', 'start', 'kill'];
      await Promise.all(raws.map((raw, i) => history.ingest([event(id, raw, i + 1)])));
      const c = await history.getContainer(id);
      assert.equal(c.history.length, raws.length);
      assert.equal(c.status, 'Killed');
    });
    it('webhooks: matching changes are queued in the recording commit and retried with back-off', async () => {
      const sent: { url: string; body: string }[] = [];
      let failures = 2;
      const webhooks = new WebhookSubscriptions(history, {
        now: clock.now,
        random: () => 0,
        backoff: { initialMs: 1000, capMs: 60_000, jitter: true },
        maxAttempts: 5,
        send: async (url, body) => {
          if (failures-- > 0) return 503;
          sent.push({ url, body });
          return 204;
        },
      });
      // Deliveries left over from other cases' subscriptions must not interfere: one of our own.
      const sub = await webhooks.create({
        url: 'http://hooks.example/berth',
        statuses: ['Failed', 'Complete'],
        created_by: 'u-1',
      });
      const id = cid();
      await history.ingest([
        event(id, 'start', 1),
        event(id, 'die', 2, { exit_code: 1 }),
        {
          type: 'finalization',
          container_id: id,
          exit_code: 1,
          logs: '',
          logs_size: 0,
          logs_truncated: false,
          outputs: [],
          error: null,
        },
      ]);
      assert.equal(await webhooks.deliverDue(), 1);
      let log = await webhooks.get(sub.id);
      assert.deepEqual(
        log.deliveries.map((d) => [d.state, d.attempts, d.last_status, d.last_error]),
        [['pending', 1, 503, 'HTTP 503']],
      );
      // Not due yet: 500 ms after the first failure with base 1 s and random 0.
      assert.equal(await webhooks.deliverDue(), 0);
      clock.advance(500);
      assert.equal(await webhooks.deliverDue(), 1);
      clock.advance(1000);
      assert.equal(await webhooks.deliverDue(), 1);
      log = await webhooks.get(sub.id);
      assert.deepEqual(log.counts, { pending: 0, delivered: 1, failed: 0 });
      assert.equal(log.deliveries[0]!.attempts, 3);
      assert.equal(sent.length, 1);
      const body = JSON.parse(sent[0]!.body) as ContainerStatusEvent & { subscription_id: string };
      assert.equal(body.subscription_id, sub.id);
      assert.equal(body.item.status, 'Failed');
      assert.equal(body.container.id, id);
      await webhooks.remove(sub.id);
      await assert.rejects(webhooks.get(sub.id), (err: BerthError) => err.code === 'not_found');
      await assert.rejects(
        webhooks.create({ url: 'ftp://x' }),
        (err: BerthError) => err.code === 'invalid_argument',
      );
    });
  });
}
