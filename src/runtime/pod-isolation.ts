import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { BerthError, errnoCode, InvalidArgumentError } from '../core/index.js';
import { nativeAddon } from './native-addon.js';
import {
  bridgeName,
  ensureRule,
  type Family,
  fileSafe,
  loadChain,
  netRunDir,
  podSubnet,
} from './netfilter.js';
import { addressesInUse, ipv4Text } from './pod-ipam.js';

/**
 * Issue 17, finding 4: pods of one data dir are isolated from pods of another unless the user asks.
 *
 * Every data dir keeps the one bridge and subnet (the L2 network and the gateway are unchanged), but
 * its pods get their addresses from a slice of the subnet of its own (a /24 of the /16; slice 0
 * holds the gateway and is never handed out). Bridged pod-to-pod traffic passes the FORWARD chain
 * (`net.bridge.bridge-nf-call-iptables`), which jumps, for `-i <bridge> -o <bridge>`, to
 * `BERTH-ISO-<bridge>`: replies, published ports (conntrack's DNAT state) and traffic inside one
 * slice return; the rest is refused. Over IPv6 pods have only link-local addresses, which carry no
 * slice: bridged IPv6 between pods is refused whole, but for neighbour discovery.
 *
 * Slices are claimed host-wide under one flock, as files `<n>` naming their owner (O_EXCL besides),
 * with `owner-<hash>` files to find an owner's slice with one read on the pod start path. The
 * chain is reloaded (one `iptables-restore`) only when a slice is claimed or reclaimed. All of it
 * lives in /run, cleared at boot with the rules and the pods.
 */

/** The isolation chain of a bridge (chain names may have 28 characters; bridges 15). */
export function isolationChain(bridge: string): string {
  return `BERTH-ISO-${bridge}`;
}

/** FORWARD's jump to it: what the bridge forwards between its own ports, its pods. */
export function isolationJump(bridge: string): string[] {
  return ['FORWARD', '-i', bridge, '-o', bridge, '-j', isolationChain(bridge)];
}

export interface PodSlice {
  readonly index: number;
  /** The slice as a CIDR, e.g. 10.213.7.0/24. */
  readonly cidr: string;
  readonly rangeStart: string;
  readonly rangeEnd: string;
  readonly gateway: string;
}

interface SubnetSlicing {
  readonly base: number;
  readonly prefix: number;
  readonly slicePrefix: number;
  readonly count: number;
}

function slicing(subnet = podSubnet()): SubnetSlicing {
  const match = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(subnet);
  const prefix = Number(match?.[5]);
  if (!match || prefix > 26)
    throw new InvalidArgumentError(
      `Invalid pod subnet "${subnet}" ($BERTH_SUBNET): expected an IPv4 CIDR of /26 or larger, sliced per data dir`,
      { field: 'BERTH_SUBNET' },
    );
  const octets = match.slice(1, 5).map(Number);
  const address = octets.reduce((sum, octet) => sum * 256 + octet, 0);
  const base = address - (address % 2 ** (32 - prefix));
  const slicePrefix = Math.min(prefix + 8, 28);
  return { base, prefix, slicePrefix, count: 2 ** (slicePrefix - prefix) };
}

export function sliceOf(index: number, subnet = podSubnet()): PodSlice {
  const { base, slicePrefix } = slicing(subnet);
  const size = 2 ** (32 - slicePrefix);
  const first = base + index * size;
  return {
    index,
    cidr: `${ipv4Text(first)}/${slicePrefix}`,
    // Neither the slice's first address nor its last: the last slice's last is the broadcast.
    rangeStart: ipv4Text(first + 1),
    rangeEnd: ipv4Text(first + size - 2),
    gateway: ipv4Text(base + 1),
  };
}

const networkNamePattern = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/;

/**
 * Whose slice a data dir's pods use: the data dir's own, or, when `$BERTH_POD_NETWORK` names a
 * network, that network's, shared by every data dir naming it (the user asked).
 */
export function sliceOwner(dataDir: string): string {
  const shared = process.env.BERTH_POD_NETWORK;
  if (shared !== undefined && shared !== '') {
    if (!networkNamePattern.test(shared))
      throw new InvalidArgumentError(
        `Invalid $BERTH_POD_NETWORK "${shared}": use letters, digits, "_", "." and "-" (max 63)`,
        { field: 'BERTH_POD_NETWORK' },
      );
    return `network ${shared}`;
  }
  return `dir ${realpathSync(dataDir)}`;
}

export function slicesDir(): string {
  return join(netRunDir(), 'slices', `${fileSafe(bridgeName())}-${fileSafe(podSubnet())}`);
}

const ownerFile = (owner: string) => `owner-${createHash('sha256').update(owner).digest('hex').slice(0, 24)}`;

function readSliceIndex(path: string): number | undefined {
  try {
    const index = Number.parseInt(readFileSync(path, 'utf8'), 10);
    return Number.isInteger(index) && index > 0 ? index : undefined;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** The slices claimed now: index → owner. */
export function claimedSlices(dir = slicesDir()): Map<number, string> {
  const claimed = new Map<number, string>();
  if (!existsSync(dir)) return claimed;
  for (const name of readdirSync(dir)) {
    if (!/^\d+$/.test(name)) continue;
    try {
      claimed.set(Number(name), readFileSync(join(dir, name), 'utf8').trim());
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
  }
  return claimed;
}

/** Runs `body` holding the slices' flock: claims, reclaims and chain loads never interleave. */
function withSlicesLock<T>(body: (dir: string) => T): T {
  const dir = slicesDir();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const fd = openSync(join(dir, 'lock'), 'a', 0o600);
  try {
    nativeAddon().flock(fd, 2 /* LOCK_EX, blocking */);
    return body(dir);
  } finally {
    closeSync(fd); // releases the lock
  }
}

/**
 * The data dir's slice: one read when it has one (the pod start path); else, once, a slice claimed
 * and its rule loaded.
 */
export function podSlice(dataDir: string): PodSlice {
  const owner = sliceOwner(dataDir);
  const known = readSliceIndex(join(slicesDir(), ownerFile(owner)));
  if (known !== undefined) return sliceOf(known);
  return sliceOf(withSlicesLock((dir) => claimSlice(dir, owner)));
}

function claimSlice(dir: string, owner: string): number {
  const known = readSliceIndex(join(dir, ownerFile(owner)));
  if (known !== undefined) return known; // another process claimed it while this one waited
  const { count } = slicing();
  // Data dirs that are gone give their slices back first (a claim is rare; this keeps the chain
  // short); slices of data dirs that exist only when none is left.
  freeSlices(dir, 'gone', false);
  // Pods attached before slices took their addresses anywhere in the subnet, from the one legacy
  // store that a slice's own store does not read: a slice holding one of them is not handed out,
  // or host-local could give its address to a second pod. That store only shrinks now.
  const legacy = slicesHolding(addressesInUse('legacy'));
  for (let attempt = 0; attempt < 2; attempt++) {
    for (let index = 1; index < count; index++) {
      if (legacy.has(index)) continue;
      let fd: number;
      try {
        fd = openSync(join(dir, String(index)), 'wx', 0o600);
      } catch (err) {
        if (errnoCode(err) === 'EEXIST') continue;
        throw err;
      }
      try {
        writeFileSync(fd, `${owner}\n`);
      } finally {
        closeSync(fd);
      }
      writeFileSync(join(dir, ownerFile(owner)), `${index}\n`, { mode: 0o600 });
      loadIsolation(dir);
      return index;
    }
    if (attempt === 0 && freeSlices(dir, 'idle') === 0) break;
  }
  throw new BerthError(
    'unavailable',
    `Cannot attach the pod: every slice of the pod subnet ${podSubnet()} (${count - 1}) belongs to a data dir with pods on the network; set a larger $BERTH_SUBNET or share one with $BERTH_POD_NETWORK`,
  );
}

/** The indices of the slices the addresses are in. */
function slicesHolding(addresses: readonly number[]): Set<number> {
  const { base, slicePrefix } = slicing();
  const size = 2 ** (32 - slicePrefix);
  return new Set(addresses.map((address) => Math.floor(address / size) - Math.floor(base / size)));
}

/**
 * Frees slices: `gone`, those of data dirs that no longer exist; `idle`, those with no pod on the
 * network either (no address host-local handed out in them), data dirs or shared networks. A
 * process that read its data dir's idle slice just before may still attach one pod in it: that
 * pod is then not isolated from the slice's next owner, until it stops.
 * Returns how many it freed, and reloads the chain if any.
 */
function freeSlices(dir: string, which: 'gone' | 'idle', reload = true): number {
  const claimed = claimedSlices(dir);
  const used = which === 'idle' ? slicesHolding(addressesInUse()) : new Set<number>();
  let freed = 0;
  for (const [index, owner] of claimed) {
    const gone = owner.startsWith('dir ') && !existsSync(owner.slice(4));
    if (which === 'gone' ? !gone : used.has(index)) continue;
    rmSync(join(dir, ownerFile(owner)), { force: true });
    rmSync(join(dir, String(index)), { force: true });
    freed++;
  }
  if (freed > 0 && reload) loadIsolation(dir);
  return freed;
}

/** Frees, under the lock, the slices of data dirs that are gone (`berth gc` does). */
export function reclaimPodSlices(which: 'gone' | 'idle' = 'gone'): number {
  return withSlicesLock((dir) => freeSlices(dir, which));
}

// ICMPv6 neighbour discovery (133-137) and multicast listener reports (130-132, 143): without them
// the refusals below would only be slow timeouts.
const icmpv6Kept = [130, 131, 132, 133, 134, 135, 136, 137, 143];

/**
 * `legacy`: the addresses of pods attached before slices (an upgrade), anywhere in the subnet. They
 * reach and are reached by every pod, as before, until they stop: refused, one system's pods would
 * lose each other at the first pod a new berth starts. Their addresses are in no slice handed out
 * (claimSlice), and every load reads them again, so a rule outlives its pod only until the next
 * claim, free or `berth gc`, and no claim hands out an address still ruled so.
 */
function isolationRestore(family: Family, slices: readonly string[], legacy: readonly string[]): string {
  const chain = isolationChain(bridgeName());
  const refuse = `-A ${chain} -m comment --comment "berth: pods of other data dirs" -j REJECT`;
  const rules =
    family === 'ipv4'
      ? [
          `-A ${chain} -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN`,
          // A published port: portmap DNATed it, so any pod reaches it at the gateway address.
          `-A ${chain} -m conntrack --ctstate DNAT -j RETURN`,
          ...slices.map((cidr) => `-A ${chain} -s ${cidr} -d ${cidr} -j RETURN`),
          ...legacy.flatMap((address) =>
            ['-s', '-d'].map(
              (side) =>
                `-A ${chain} ${side} ${address}/32 -m comment --comment "berth: pod attached before slices" -j RETURN`,
            ),
          ),
          refuse,
        ]
      : [...icmpv6Kept.map((type) => `-A ${chain} -p ipv6-icmp --icmpv6-type ${type} -j RETURN`), refuse];
  return ['*filter', `:${chain} - [0:0]`, ...rules, 'COMMIT', ''].join('\n');
}

/** Replaces the chain with one built from the claimed slices (declaring a chain flushes it). */
function loadIsolation(dir: string): void {
  const slices = [...claimedSlices(dir).keys()].sort((a, b) => a - b).map((i) => sliceOf(i).cidr);
  const legacy = addressesInUse('legacy').map(ipv4Text);
  loadChain('ipv4', isolationRestore('ipv4', slices, legacy), 'the pod isolation chain');
  if (existsSync('/proc/sys/net/ipv6'))
    loadChain('ipv6', isolationRestore('ipv6', [], []), 'the pod isolation chain');
}

/**
 * Bridged frames pass iptables only with br_netfilter's sysctls on. They are the host's, not the
 * bridge's: as with Docker, every bridge of the host then goes through FORWARD.
 */
function enableBridgeFiltering(): void {
  const sysctl = '/proc/sys/net/bridge/bridge-nf-call-iptables';
  if (!existsSync(sysctl)) spawnSync('modprobe', ['br_netfilter'], { stdio: 'ignore' });
  if (!existsSync(sysctl))
    throw new BerthError(
      'unavailable',
      'Cannot set up --net private: no br_netfilter in this kernel, so pods of different data dirs could not be isolated',
    );
  for (const name of ['bridge-nf-call-iptables', 'bridge-nf-call-ip6tables']) {
    const path = `/proc/sys/net/bridge/${name}`;
    if (existsSync(path) && readFileSync(path, 'utf8').trim() !== '1') writeFileSync(path, '1\n');
  }
}

function isolationMarker(): string {
  return join(netRunDir(), `pod-isolation-v1-${fileSafe(bridgeName())}-${fileSafe(podSubnet())}`);
}

/**
 * The sysctls, the chain (from the slices claimed) and FORWARD's jumps, unless the marker says they
 * were set up this boot. Returns whether something was missing.
 */
export function ensurePodIsolation(force = false): 'known' | 'present' | 'added' {
  const marker = isolationMarker();
  if (!force && existsSync(marker)) return 'known';
  enableBridgeFiltering();
  let added = false;
  withSlicesLock((dir) => {
    loadIsolation(dir);
    added = ensureRule('ipv4', 'filter', isolationJump(bridgeName()), true);
    if (existsSync('/proc/sys/net/ipv6'))
      added = ensureRule('ipv6', 'filter', isolationJump(bridgeName()), true) || added;
  });
  writeFileSync(marker, `${bridgeName()} ${podSubnet()}\n`);
  return added ? 'added' : 'present';
}

/** For `berth gc`: as recheckPodNetworkRules, for the isolation chain. */
export function recheckPodIsolation(): 'unused' | 'present' | 'added' {
  if (!existsSync(isolationMarker())) return 'unused';
  const found = ensurePodIsolation(true);
  reclaimPodSlices('gone');
  return found === 'known' ? 'present' : found;
}
