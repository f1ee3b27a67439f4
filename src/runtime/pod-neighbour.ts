import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * A pod's address may have been another pod's a moment ago (host-local hands addresses out again,
 * round-robin within a slice; after a wrap-around the next one may be one just freed). The host
 * still has a neighbour (ARP) entry for it, with the old pod's MAC, and may hold it REACHABLE for
 * up to 45 s (`base_reachable_time` of 30 s, randomized ×0.5–1.5) without asking again: the
 * cell's monitor then sends every probe to a MAC no port of the bridge has, and the new pod, alive,
 * fails its monitor until its start timeout. The new pod sends no gratuitous ARP, so berth removes
 * the entry when it hands the address out, and the host's next packet asks who has it.
 *
 * The ARP table is read first (one small /proc read), so the exec happens only when there is an
 * entry to remove, not on every pod start.
 */
export function forgetNeighbour(address: string, bridge: string): boolean {
  if (!hasNeighbour(address, bridge)) return false;
  spawnSync('ip', ['neigh', 'del', address, 'dev', bridge], { stdio: 'ignore' });
  return true;
}

/** Whether the host's ARP table has an entry for `address` on `bridge`. */
export function hasNeighbour(address: string, bridge: string): boolean {
  let table: string;
  try {
    table = readFileSync('/proc/net/arp', 'utf8');
  } catch {
    return false; // no IPv4 ARP table to hold a stale entry
  }
  return table.split('\n').some((line) => {
    const fields = line.trim().split(/\s+/);
    return fields[0] === address && fields[fields.length - 1] === bridge;
  });
}
