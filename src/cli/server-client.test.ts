import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../api/build-app.js';
import { bbsPublicOperations, openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { HttpJsonClient } from '../core/index.js';
import { desiredDefinition } from '../testing/bbs-store-contract.js';
import { listAll } from './server-client.js';

describe('listAll', () => {
  let store: SqlBbsStore;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let client: HttpJsonClient;
  before(async () => {
    store = await openBbsStore(':memory:');
    app = await buildApp({ store });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    client = new HttpJsonClient(
      `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    );
    for (const guid of ['e', 'a', 'd', 'b', 'c']) await store.desireLRP(desiredDefinition(guid, 0));
    await store.desireLRP(desiredDefinition('other', 0, { domain: 'elsewhere' }));
  });
  after(async () => {
    await app.close();
    await store.close();
  });

  it('walks every page of a list route, keeping the caller’s filter', async () => {
    const all = await listAll(
      client,
      bbsPublicOperations.listDesiredLrps,
      'desired_lrps',
      { domain: 'd' },
      2,
    );
    assert.deepEqual(
      all.map((d) => d.process_guid),
      ['a', 'b', 'c', 'd', 'e'],
    );
  });
});
