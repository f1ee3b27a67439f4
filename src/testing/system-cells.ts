import type { BbsStore } from '../bbs/index.js';

/**
 * Plays the cells (the rep's side of the BBS): every UNCLAIMED instance of the system is claimed
 * and started on cell-<n>; an instance no longer desired is stopped and removed.
 */
export async function playCells(store: BbsStore, domain: string): Promise<void> {
  const desired = new Map(
    (await store.listDesiredLRPs({ domain })).map((d) => [d.process_guid, d.instances]),
  );
  for (const a of await store.listActualLRPs({ domain })) {
    if (a.evacuating) continue;
    if (a.index >= (desired.get(a.process_guid) ?? 0)) {
      await store.removeActualLRP({
        process_guid: a.process_guid,
        index: a.index,
        expected: a.modification_tag,
      });
      continue;
    }
    if (a.state !== 'UNCLAIMED') continue;
    const cell_id = `cell-${a.index % 3}`;
    const key = { instance_guid: `ig-${a.process_guid}-${a.index}`, cell_id };
    const claimed = await store.claimActualLRP({
      process_guid: a.process_guid,
      index: a.index,
      expected: a.modification_tag,
      instance_key: key,
    });
    await store.startActualLRP({
      process_guid: a.process_guid,
      index: a.index,
      expected: claimed.modification_tag,
      instance_key: key,
      net_info: { address: '10.0.0.1', ports: [] },
    });
  }
}
