import { sql } from 'kysely';
import type { SqlBbsStore } from '../bbs/index.js';

/** ActualLRPs per DesiredLRP in the seeded clusters. */
export const instancesPerLrp = 100;

/**
 * Grows a store to `target` RUNNING ActualLRPs (from `from`), `instancesPerLrp` per DesiredLRP,
 * spread over `cells` cells named `cell-N`. A real cluster is mostly RUNNING: a cell, an instance
 * guid, an address and a port mapping per instance. Desiring makes them UNCLAIMED (empty strings,
 * no ports), which reads cheaper than the real thing; the rep's CAS per instance would take
 * minutes, so one UPDATE stands in.
 */
export async function seedRunningLrps(
  store: SqlBbsStore,
  from: number,
  target: number,
  cells = 50,
): Promise<void> {
  for (let seeded = from; seeded < target; seeded += instancesPerLrp) {
    await store.desireLRP({
      process_guid: `lrp-${String(seeded / instancesPerLrp).padStart(6, '0')}`,
      domain: 'bench',
      instances: instancesPerLrp,
      image: 'registry.example/app:1',
      command: ['/app', '--port', '8080'],
      env: { PORT: '8080', MODE: 'production' },
      memory_mb: 256,
      disk_mb: 1024,
      ports: [8080],
      routes: { http: ['app.example.com'] },
      annotation: 'bench',
      monitor: { http: { port: 8080, path: '/healthz' } },
      start_timeout_s: 60,
      placement_tags: [],
    });
  }
  await sql`UPDATE actual_lrps SET state = 'RUNNING', cell_id = 'cell-' || (idx % ${sql.lit(cells)}),
    instance_guid = tag_epoch, address = '10.0.' || (idx % 200) || '.' || (idx % 250),
    ports = '[{"container_port":8080,"host_port":' || (61000 + idx) || '}]', tag_index = tag_index + 1
    WHERE state = 'UNCLAIMED'`.execute(store.backend.db);
}
