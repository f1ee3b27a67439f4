import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { SqlBbsStore } from '../bbs/index.js';

/** ActualLRPs per DesiredLRP in the seeded clusters. */
export const instancesPerLrp = 100;

/**
 * Grows a store to `target` RUNNING ActualLRPs (from `from`), `perLrp` per DesiredLRP,
 * spread over `cells` cells named `cell-N`. A real cluster is mostly RUNNING: a cell, an instance
 * guid, an address and a port mapping per instance. Desiring makes them UNCLAIMED (empty strings,
 * no ports), which reads cheaper than the real thing; the rep's CAS per instance would take
 * minutes, so one UPDATE stands in, and one DELETE for the auctioneer's acks of their start
 * requests.
 *
 * The on-disk layout is a live cluster's, not a bulk load's: process guids are random (as Diego's
 * are), so rows are not stored in key order, and every LRP is then scaled down by a tenth and back
 * up, as apps are, so its newest instances sit apart from its others. A read that walks the key
 * order pays for that layout here as it would in production.
 */
export async function seedRunningLrps(
  store: SqlBbsStore,
  from: number,
  target: number,
  cells = 50,
  perLrp = instancesPerLrp,
): Promise<void> {
  const guids: string[] = [];
  for (let seeded = from; seeded < target; seeded += perLrp) {
    const guid = benchProcessGuid(seeded / perLrp);
    guids.push(guid);
    await store.desireLRP({
      process_guid: guid,
      domain: 'bench',
      instances: perLrp,
      image: 'registry.example/app:1',
      command: ['/app', '--port', '8080'],
      env: { PORT: '8080', MODE: 'production' },
      memory_mb: 256,
      disk_mb: 1024,
      ports: [8080],
      routes: { http: [{ hostname: 'app.example.com', port: 8080 }] },
      annotation: 'bench',
      monitor: { http: { port: 8080, path: '/healthz' } },
      start_timeout_s: 60,
      placement_tags: [],
    });
  }
  for (const instances of [perLrp - Math.max(1, Math.round(perLrp / 10)), perLrp])
    for (const guid of guids) await store.updateDesiredLRP({ process_guid: guid, update: { instances } });
  await sql`UPDATE actual_lrps SET state = 'RUNNING', cell_id = 'cell-' || (idx % ${sql.lit(cells)}),
    instance_guid = tag_epoch, address = '10.0.' || (idx % 200) || '.' || (idx % 250),
    ports = '[{"container_port":8080,"host_port":' || (61000 + idx) || '}]', tag_index = tag_index + 1
    WHERE state = 'UNCLAIMED'`.execute(store.backend.db);
  // Placed and running: the auctioneer took and acknowledged their start requests long ago.
  await sql`DELETE FROM start_requests WHERE kind = 'lrp'`.execute(store.backend.db);
}

/** The n-th seeded LRP's process guid: stable across runs, in no particular key order. */
export function benchProcessGuid(n: number): string {
  return `lrp-${createHash('sha256').update(String(n)).digest('hex').slice(0, 16)}`;
}
