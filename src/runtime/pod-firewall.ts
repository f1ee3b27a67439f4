import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  bridgeName,
  ensureRule,
  type Family,
  fileSafe,
  loadChain,
  netRunDir,
  podSubnet,
} from './netfilter.js';
import { ensurePodIsolation, recheckPodIsolation } from './pod-isolation.js';

export { bridgeName, podSubnet };

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

/**
 * Where the rules are known to be in place: /run is cleared at boot, as iptables rules are, so the
 * check (a few iptables execs) runs once per boot, not once per pod. `berth gc` checks again
 * whatever the marker says, for a host whose rules were flushed while it ran.
 */
function marker(): string {
  // The bridge is in the name: the guard is the bridge's; "v2" since the guard came (a marker of
  // a berth before it says nothing of the guard).
  return join(netRunDir(), `pod-rules-v2-${fileSafe(bridgeName())}-${fileSafe(podSubnet())}`);
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

/** Loads the guard's chain and makes INPUT jump to it, first; says whether the jump was missing. */
function ensureHostGuard(family: Family): boolean {
  const bridge = bridgeName();
  loadChain(family, hostGuardRestore(bridge, family), 'the pod host guard');
  return ensureRule(family, 'filter', hostGuardJump(bridge), true);
}

export type PodRulesFound = 'known' | 'present' | 'added';

/** The masquerade rule and the host guard, unless the marker says they were checked this boot. */
function ensureNatAndGuard(force: boolean): PodRulesFound {
  const path = marker();
  if (!force && existsSync(path)) return 'known';
  let added = ensureRule('ipv4', 'nat', masqueradeRule(podSubnet()), false);
  added = ensureHostGuard('ipv4') || added;
  // Pods get IPv6 link-local addresses, and the host's bridge has one: a service of the host
  // listening on `::` would answer there.
  if (existsSync('/proc/sys/net/ipv6')) added = ensureHostGuard('ipv6') || added;
  mkdirSync(netRunDir(), { recursive: true });
  writeFileSync(path, `${bridgeName()} ${podSubnet()}\n`);
  return added ? 'added' : 'present';
}

function either(a: PodRulesFound, b: PodRulesFound): PodRulesFound {
  if (a === 'added' || b === 'added') return 'added';
  return a === 'known' && b === 'known' ? 'known' : 'present';
}

/**
 * Makes sure the subnet's masquerade rule, the bridge's host guard and the isolation between data
 * dirs (pod-isolation.ts) are in place (adding what is missing), unless their markers say they were
 * checked this boot. Returns `known` (markers), `present` or `added` (something was missing).
 */
export function ensurePodNetworkRules(force = false): PodRulesFound {
  return either(ensureNatAndGuard(force), ensurePodIsolation(force));
}

/**
 * For `berth gc`: when pods have used `--net private` since boot, checks the rules are still there
 * (a firewall reload may have flushed them) and restores them. `unused`: nothing to check. Each
 * part is checked only if its marker says it was set up: a host that ran pods under a berth from
 * before the isolation gets it with its next pod, not from gc claiming it had been flushed.
 */
export function recheckPodNetworkRules(): 'unused' | 'present' | 'added' {
  const natAndGuard = existsSync(marker()) ? ensureNatAndGuard(true) : 'unused';
  const isolation = recheckPodIsolation();
  if (natAndGuard === 'unused' && isolation === 'unused') return 'unused';
  return natAndGuard === 'added' || isolation === 'added' ? 'added' : 'present';
}
