import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { desiredDefinition } from '../testing/bbs-store-contract.js';
import { TokenStore } from './auth/token-store.js';
import { buildApp } from './build-app.js';
import { createHistoryServerParts } from './history-server-parts.js';

/** Reads a stream to its end (or until `stop` says so); returns the `event:` names seen. */
async function eventsUntilEnd(body: ReadableStream<Uint8Array>, stop?: (types: string[]) => boolean) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const types = () => [...text.matchAll(/event: (\S+)\n/g)].map((m) => m[1]!);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { types: types(), ended: true };
    text += decoder.decode(value, { stream: true });
    if (stop?.(types())) {
      await reader.cancel();
      return { types: types(), ended: false };
    }
  }
}

describe('GET /v1/events ends for a token revoked while it streams', () => {
  let dir: string;
  let store: SqlBbsStore;
  let tokens: TokenStore;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let url = '';
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-stream-auth-'));
    store = await openBbsStore(':memory:');
    await createHistoryServerParts(store, { auth: 'tokens', dataDir: dir });
    // No lookup cache: a revocation is seen on the stream's next check.
    tokens = new TokenStore(store, { cacheMs: 0 });
    app = await buildApp({
      store,
      auth: tokens,
      eventPollMs: 20,
      eventReauthMs: 50,
      onEvents: (l) => store.onEvents(l),
      headEventId: () => store.headEventId(),
    });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a live token keeps its stream; a revoked one has it ended and its reconnect refused', async () => {
    const kept = await tokens.create({ role: 'viewer', name: 'kept' });
    const revoked = await tokens.create({ role: 'viewer', name: 'revoked' });
    const open = async (token: string) => {
      const res = await fetch(`${url}/v1/events?after=now`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(res.status, 200);
      return res.body!;
    };
    const [keptBody, revokedBody] = [await open(kept.token), await open(revoked.token)];
    await store.desireLRP(desiredDefinition('before-revoke', 0));
    await tokens.revoke(revoked.id);
    const ended = await eventsUntilEnd(revokedBody);
    assert.equal(ended.ended, true, 'the server ended the revoked token stream');
    await store.removeDesiredLRP({ process_guid: 'before-revoke' });
    const live = await eventsUntilEnd(keptBody, (types) => types.includes('desired_lrp_removed'));
    assert.equal(live.ended, false, "the other token's stream still follows");
    assert.deepEqual(live.types, ['desired_lrp_created', 'desired_lrp_removed']);
    const again = await fetch(`${url}/v1/events`, { headers: { authorization: `Bearer ${revoked.token}` } });
    assert.equal(again.status, 401);
  });
});
