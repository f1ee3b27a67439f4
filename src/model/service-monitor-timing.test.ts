import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openBbsStore } from '../bbs/index.js';
import { systemDomain } from './instance-names.js';
import { parseSystemDefinition } from './system-definition-yaml.js';
import { ensureDesiredLRP } from './systems-context.js';

/** A service's monitor timing (issue 20) reaches the DesiredLRP its deploy desires, field for field. */
describe('a service monitor timing in its DesiredLRP', () => {
  it('the YAML fields are the DesiredLRP monitor fields', async () => {
    const definition = parseSystemDefinition(`
system: shop
services:
  /api:
    image: bb:1
    ports: [8080]
    monitor: {http: {port: 8080, path: /ready}, timeout_ms: 2000, period_ms: 3000, failure_threshold: 4, startup_grace_ms: 15000}
`);
    const store = await openBbsStore(':memory:');
    try {
      await store.upsertDomain({ domain: systemDomain('shop'), ttl_ms: 0 });
      const api = definition.services[0]!;
      await ensureDesiredLRP(store, 'shop-api-v1', api, 1, 'shop', []);
      const desired = await store.getDesiredLRP({ process_guid: 'shop-api-v1' });
      assert.deepEqual(desired.monitor, {
        http: { port: 8080, path: '/ready' },
        timeout_ms: 2000,
        period_ms: 3000,
        failure_threshold: 4,
        startup_grace_ms: 15000,
      });
    } finally {
      await store.close();
    }
  });
});
