import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { desiredDefinition } from '../testing/bbs-store-contract.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { buildApp } from './build-app.js';

/** Reads a stream until `count` events arrived; returns their `event:` names and data. */
async function readEvents(
  body: ReadableStream<Uint8Array>,
  count: number,
): Promise<{ type: string; data: string }[]> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const events = () =>
    [...text.matchAll(/event: (\S+)\ndata: (.*)\n\n/g)].map((m) => ({ type: m[1]!, data: m[2]! }));
  while (events().length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return events();
}

for (const backend of ['SQLite', 'PostgreSQL'] as const)
  describe(`GET /v1/events?after=now follows from the head, not the oldest kept event: ${backend}`, {
    skip: backend === 'PostgreSQL' ? (postgresSkipReason() ?? false) : false,
  }, () => {
    let store: SqlBbsStore;
    let postgres: PostgresServer | undefined;
    let app: Awaited<ReturnType<typeof buildApp>>;
    let url = '';
    before(async () => {
      postgres = backend === 'PostgreSQL' ? await startPostgres() : undefined;
      store = await openBbsStore(postgres?.url ?? ':memory:');
      app = await buildApp({
        store,
        eventPollMs: 50,
        onEvents: (l) => store.onEvents(l),
        headEventId: () => store.headEventId(),
      });
      url = await app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(async () => {
      await app.close();
      await store.close();
      await postgres?.stop();
    });

    it('an empty log has no head; after=now then sees the first event', async () => {
      assert.equal(await store.headEventId(), '');
      const res = await fetch(`${url}/v1/events?after=now`);
      assert.equal(res.status, 200);
      await store.desireLRP(desiredDefinition('first', 0));
      const [event] = await readEvents(res.body!, 1);
      assert.equal(event?.type, 'desired_lrp_created');
      assert.match(event?.data ?? '', /"process_guid":"first"/);
    });

    it('skips what was written before the stream opened and delivers what follows', async () => {
      for (const guid of ['old-1', 'old-2']) await store.desireLRP(desiredDefinition(guid, 0));
      const head = await store.headEventId();
      assert.match(head, /^\d+-\d+$/);
      const res = await fetch(`${url}/v1/events?after=now`);
      await store.desireLRP(desiredDefinition('new-1', 0));
      const [event] = await readEvents(res.body!, 1);
      assert.match(event?.data ?? '', /"process_guid":"new-1"/);
      // The whole log from the start still holds the old ones: now is not a prune.
      const all = await store.readEvents({ limit: 100 });
      assert.ok(all.some((e) => e.type === 'desired_lrp_created' && e.desired_lrp.process_guid === 'old-1'));
    });
  });

describe('GET /v1/events?after=now without a head reader', () => {
  it('is a 400 naming the field', async () => {
    const store = await openBbsStore(':memory:');
    const app = await buildApp({ store });
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/events?after=now' });
      assert.equal(res.statusCode, 400);
      assert.match(res.body, /after/);
    } finally {
      await app.close();
      await store.close();
    }
  });
});
