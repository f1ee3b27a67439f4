import { spawnSync } from 'node:child_process';
import { BerthError } from '../core/index.js';

/**
 * What every part of the `--net private` host setup shares: which bridge and subnet, where the
 * per-boot state lives, and how a rule or a chain reaches the host's iptables. The host guard and
 * outbound NAT (pod-firewall.ts) and the isolation between data dirs (pod-isolation.ts) are built
 * on it, so neither imports the other's internals.
 */

export function podSubnet(): string {
  return process.env.BERTH_SUBNET ?? '10.213.0.0/16';
}

/** The host bridge every pod is attached to. */
export function bridgeName(): string {
  return process.env.BERTH_BRIDGE ?? 'berth0';
}

/** Where berth keeps the pod network's per-boot state (markers, slices): /run, cleared at boot. */
export function netRunDir(): string {
  return process.env.BERTH_NET_RUN_DIR ?? '/run/berth';
}

/** A bridge or subnet as part of a file name. */
export function fileSafe(text: string): string {
  return text.replace(/[^0-9a-zA-Z.]/g, '_');
}

export type Family = 'ipv4' | 'ipv6';

export function tool(family: Family, restore = false): string {
  return `${family === 'ipv4' ? 'iptables' : 'ip6tables'}${restore ? '-restore' : ''}`;
}

function fail(what: string, result: ReturnType<typeof spawnSync>): never {
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

/**
 * Loads `input` with `iptables-restore --noflush`: a chain it declares is flushed and refilled,
 * so loading again replaces the chain's rules instead of adding copies. `what` names it in errors.
 */
export function loadChain(family: Family, input: string, what: string): void {
  const load = spawnSync(tool(family, true), ['--wait', '--noflush'], { input, encoding: 'utf8' });
  if (load.error)
    throw new BerthError(
      'unavailable',
      `Cannot set up --net private: ${tool(family, true)}: ${load.error.message}`,
    );
  if (load.status !== 0) fail(`load ${what} (${tool(family, true)})`, load);
}
