import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError } from '../core/index.js';
import { tryLock } from './flock.js';

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
  return withRulesLock(() => {
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
  });
}

/** How long a berth process waits for another one's check-and-add before giving up. */
const rulesLockWaitMs = 30_000;

/**
 * Runs `work` holding the host-wide rules lock (flock on a file in netRunDir). A check and an add
 * are two iptables commands, and iptables' own lock covers only one: two cells starting at once
 * would both find a rule missing and both add it. The wait polls (the section is two short
 * commands) because the callers are synchronous.
 */
function withRulesLock<T>(work: () => T): T {
  mkdirSync(netRunDir(), { recursive: true, mode: 0o700 });
  const fd = openSync(join(netRunDir(), 'iptables-rules.lock'), 'a', 0o600);
  try {
    const deadline = Date.now() + rulesLockWaitMs;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    while (!tryLock(fd, 'exclusive')) {
      if (Date.now() > deadline)
        throw new BerthError(
          'unavailable',
          `Cannot set up --net private: another berth process held ${join(netRunDir(), 'iptables-rules.lock')} for ${rulesLockWaitMs / 1000} s`,
        );
      Atomics.wait(pause, 0, 0, 5);
    }
    return work();
  } finally {
    // Closing the only descriptor drops the lock.
    closeSync(fd);
  }
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
