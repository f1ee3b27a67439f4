import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '../core/index.js';
import { bridgeName, fileSafe, podSubnet } from './netfilter.js';

/**
 * Where host-local keeps berth's address reservations: one file per address handed out, named by
 * the address and holding the container id, plus `last_reserved_ip.0`, the address it handed out
 * last, from which the next search starts (round-robin through the range).
 *
 * Each subnet slice (pod-isolation.ts) has a store of its own (host-local's `dataDir`). One store
 * for every slice would hold one last-reserved address for all of them: a pod of data dir A would
 * move it into A's slice, the next pod of data dir B would find it outside B's range and search
 * from B's first address, and so take the address B freed last. A store per slice keeps the
 * round-robin inside the slice, so an address comes back only after the rest of the slice.
 *
 * Pods attached before slices have their reservations in host-local's default store (`legacy`).
 */

/** The CNI network's name: host-local keeps a store's files under `<dataDir>/<name>`. */
export const cniNetworkName = 'berth';

function ipamRoot(): string {
  return process.env.BERTH_CNI_IPAM_DIR ?? '/var/lib/cni';
}

/** The host-local `dataDir` of pods attached before slices: host-local's default. */
export function legacyIpamDataDir(): string {
  return join(ipamRoot(), 'networks');
}

/** The reservations of pods attached before slices. */
export function legacyIpamStore(): string {
  return join(legacyIpamDataDir(), cniNetworkName);
}

function slicesIpamRoot(): string {
  return join(ipamRoot(), 'berth-slices', `${fileSafe(bridgeName())}-${fileSafe(podSubnet())}`);
}

/** The host-local `dataDir` of a slice. */
export function sliceIpamDataDir(index: number): string {
  return join(slicesIpamRoot(), String(index));
}

/** Every store that may hold reservations: the legacy one, then each slice's, with its index. */
function ipamStores(): { readonly slice?: number; readonly path: string }[] {
  const stores: { slice?: number; path: string }[] = [{ path: legacyIpamStore() }];
  const root = slicesIpamRoot();
  if (existsSync(root))
    for (const name of readdirSync(root))
      if (/^\d+$/.test(name)) stores.push({ slice: Number(name), path: join(root, name, cniNetworkName) });
  return stores;
}

const addressPattern = /^\d+\.\d+\.\d+\.\d+$/;

function reservations(store: string): string[] {
  try {
    return readdirSync(store).filter((name) => addressPattern.test(name));
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return [];
    throw err;
  }
}

/** An IPv4 address as a number. */
export function ipv4Number(address: string): number {
  return address.split('.').reduce((sum, octet) => sum * 256 + Number(octet), 0);
}

/** A number as an IPv4 address. */
export function ipv4Text(value: number): string {
  return [24, 16, 8, 0].map((shift) => String(Math.floor(value / 2 ** shift) % 256)).join('.');
}

/** The IPv4 addresses host-local has handed out on berth's network, in every store. */
export function addressesInUse(which: 'all' | 'legacy' = 'all'): number[] {
  const stores = which === 'all' ? ipamStores() : [{ path: legacyIpamStore() }];
  return stores.flatMap((store) => reservations(store.path).map(ipv4Number));
}

/**
 * Which store holds the reservation of a pod whose slice is not recorded: a slice's index, or
 * `undefined` for the legacy store (a pod attached before slices, or none at all). Reads every
 * reservation; only teardown without a network.json slice comes here.
 */
export function reservationSlice(uuid: string): number | undefined {
  for (const store of ipamStores()) {
    if (store.slice === undefined) continue;
    for (const address of reservations(store.path)) {
      try {
        const owner = readFileSync(join(store.path, address), 'utf8').split(/\r?\n/)[0];
        if (owner === uuid) return store.slice;
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw err; // released meanwhile
      }
    }
  }
  return undefined;
}
