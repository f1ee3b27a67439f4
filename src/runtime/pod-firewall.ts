import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError } from '../core/index.js';

/**
 * The host's firewall rules for `--net private` pods, installed once per boot (not once per pod)
 * and restored by `berth gc`:
 *
 * - outbound NAT: one MASQUERADE rule for the whole pod subnet, as podman's netavark does, not the
 *   bridge plugin's `ipMasq` (a NAT chain per pod: ~10 iptables execs on every start and stop);
 * - the host guard (issue 17): a pod reaches no service of the host itself. Packets from the
 *   bridge to any of the host's addresses (the INPUT chain: the gateway, the host's LAN address,
 *   IPv6 link-local) are refused, except replies to connections the host opened (its probes, its
 *   proxying) and pings. Published ports are unaffected: portmap DNATs them in PREROUTING, before
 *   routing, so they are forwarded to their pod and never reach INPUT, also from another pod.
 */

export function podSubnet(): string {
  return process.env.BERTH_SUBNET ?? '10.213.0.0/16';
}

/** The host bridge every pod is attached to. */
export function bridgeName(): string {
  return process.env.BERTH_BRIDGE ?? 'berth0';
}

/**
 * Where the rules are known to be in place: /run is cleared at boot, as iptables rules are, so the
 * check (a few iptables execs) runs once per boot, not once per pod. `berth gc` checks again
 * whatever the marker says, for a host whose rules were flushed while it ran.
 */
const markerDir = process.env.BERTH_NET_RUN_DIR ?? '/run/berth';

/** Where berth keeps the pod network's per-boot state (markers, slices): cleared at boot. */
export function netRunDir(): string {
  return markerDir;
}

/** A bridge or subnet as part of a file name. */
export function fileSafe(text: string): string {
  return text.replace(/[^0-9a-zA-Z.]/g, '_');
}

function marker(): string {
  const safe = (text: string) => text.replace(/[^0-9a-zA-Z.]/g, '_');
  // The bridge is in the name: the guard is the bridge's; "v2" since the guard came (a marker of
  // a berth before it says nothing of the guard).
  return join(markerDir, `pod-rules-v2-${safe(bridgeName())}-${safe(podSubnet())}`);
}

export function masqueradeRule(subnet: string): string[] {
  return [
    'POSTROUTING',
    '-s',
    subnet,
    '!',
    '-d',
    subnet,
    '-m',
    'comment',
    '--comment',
    'berth pods',
    '-j',
    'MASQUERADE',
  ];
}

/** The filter chain of the host guard of a bridge (chain names may have 28 characters; bridges 15). */
export function hostGuardChain(bridge: string): string {
  return `BERTH-GUARD-${bridge}`;
}

/** INPUT's jump to the guard: everything that comes in from the bridge. */
export function hostGuardJump(bridge: string): string[] {
  return ['INPUT', '-i', bridge, '-j', hostGuardChain(bridge)];
}

export type Family = 'ipv4' | 'ipv6';

/**
 * The guard's chain, for `iptables-restore --noflush`: declaring a chain that exists flushes it,
 * so loading this again replaces its rules instead of adding copies. ICMPv6 stays open: neighbour
 * discovery is ICMPv6, and breaking it would only make the refusals below slow timeouts.
 */
function hostGuardRestore(bridge: string, family: Family): string {
  const chain = hostGuardChain(bridge);
  const ping =
    family === 'ipv4'
      ? `-A ${chain} -p icmp --icmp-type echo-request -j RETURN`
      : `-A ${chain} -p ipv6-icmp -j RETURN`;
  return [
    '*filter',
    `:${chain} - [0:0]`,
    `-A ${chain} -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN`,
    ping,
    // REJECT, not DROP: a pod's connection fails at once ("connection refused"), not after a timeout.
    `-A ${chain} -m comment --comment "berth: pods reach no host service" -j REJECT`,
    'COMMIT',
    '',
  ].join('\n');
}

export function tool(family: Family, restore = false): string {
  return `${family === 'ipv4' ? 'iptables' : 'ip6tables'}${restore ? '-restore' : ''}`;
}

export function fail(what: string, result: ReturnType<typeof spawnSync>): never {
  const stderr = typeof result.stderr === 'string' ? result.stderr.trim() : '';
  throw new BerthError(
    'internal',
    `Cannot ${what}: ${result.error?.message ?? (stderr || `exited ${result.status}`)}`,
  );
}

/** Adds `rule` to `table` unless `-C` finds it; says whether it had to. */
export function ensureRule(family: Family, table: string, rule: readonly string[], insert: boolean): boolean {
  const run = (op: string) =>
    spawnSync(tool(family), ['--wait', '-t', table, op, ...rule], { encoding: 'utf8' });
  const check = run('-C');
  if (check.error)
    throw new BerthError(
      'unavailable',
      `Cannot set up --net private: ${tool(family)}: ${check.error.message}`,
    );
  if (check.status === 0) return false;
  const add = run(insert ? '-I' : '-A');
  if (add.status !== 0) fail(`add ${tool(family)} rule "${rule.join(' ')}"`, add);
  return true;
}

/** Loads the guard's chain and makes INPUT jump to it, first; says whether the jump was missing. */
function ensureHostGuard(family: Family): boolean {
  const bridge = bridgeName();
  const load = spawnSync(tool(family, true), ['--wait', '--noflush'], {
    input: hostGuardRestore(bridge, family),
    encoding: 'utf8',
  });
  if (load.error)
    throw new BerthError(
      'unavailable',
      `Cannot set up --net private: ${tool(family, true)}: ${load.error.message}`,
    );
  if (load.status !== 0) fail(`load the pod host guard (${tool(family, true)})`, load);
  return ensureRule(family, 'filter', hostGuardJump(bridge), true);
}

export type PodRulesFound = 'known' | 'present' | 'added';

/**
 * Makes sure the subnet's masquerade rule and the bridge's host guard are in place (adding what is
 * missing), unless the marker says they were checked this boot. Returns `known` (marker), `present`
 * or `added` (something was missing).
 */
export function ensurePodNetworkRules(force = false): PodRulesFound {
  const path = marker();
  if (!force && existsSync(path)) return 'known';
  let added = ensureRule('ipv4', 'nat', masqueradeRule(podSubnet()), false);
  added = ensureHostGuard('ipv4') || added;
  // Pods get IPv6 link-local addresses, and the host's bridge has one: a service of the host
  // listening on `::` would answer there.
  if (existsSync('/proc/sys/net/ipv6')) added = ensureHostGuard('ipv6') || added;
  mkdirSync(markerDir, { recursive: true });
  writeFileSync(path, `${bridgeName()} ${podSubnet()}\n`);
  return added ? 'added' : 'present';
}

/**
 * For `berth gc`: when pods have used `--net private` since boot, checks the rules are still there
 * (a firewall reload may have flushed them) and restores them. `unused`: nothing to check.
 */
export function recheckPodNetworkRules(): 'unused' | 'present' | 'added' {
  if (!existsSync(marker())) return 'unused';
  const found = ensurePodNetworkRules(true);
  return found === 'known' ? 'present' : found;
}
