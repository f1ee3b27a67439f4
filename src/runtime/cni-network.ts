import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, errnoCode } from '../core/index.js';
import { nativeAddon } from './native-addon.js';
import { endStdin, type NativeChild, spawnNative } from './native-process.js';
import { bridgeName, ensurePodNetworkRules, podSubnet } from './pod-firewall.js';
import { cniNetworkName, legacyIpamDataDir, reservationSlice, sliceIpamDataDir } from './pod-ipam.js';
import { podSlice, sliceOf } from './pod-isolation.js';
import type { Masquerade } from './pod-manifest.js';
import { forgetNeighbour } from './pod-neighbour.js';

/**
 * `--net private`: each pod gets its own network namespace attached to a host bridge through
 * the standard CNI plugins from Debian's containernetworking-plugins (bridge + host-local IPAM +
 * portmap). berth execs the plugins itself, as the CNI spec describes, so no CNI daemon or
 * library is involved, and published ports are real host ports (iptables DNAT, also on 127.0.0.1).
 *
 * Outbound NAT is one MASQUERADE rule for the whole pod subnet, as podman's netavark does, not the
 * bridge plugin's `ipMasq` (a NAT chain per pod: ~10 iptables execs on every start and stop, two
 * thirds of a `--net private` pod's setup cost), and pods reach no service of the host: both are
 * `pod-firewall.ts`, set up once per boot. portmap runs only for a pod that publishes ports.
 */
export const cniPluginDir = process.env.BERTH_CNI_PATH ?? '/usr/lib/cni';

export interface PortPublish {
  readonly host_port: number;
  readonly container_port: number;
}

export interface NetworkAttachment {
  readonly netns: string;
  readonly address: string;
  readonly ports: readonly PortPublish[];
  readonly masquerade: Masquerade;
  /** The host's end of the pod's veth pair, on the bridge (for `ip link show`). */
  readonly hostInterface?: string;
  /** The slice of the subnet the pod's address came from (pod-isolation.ts); absent: none. */
  readonly slice?: number;
}

/** The named netns of a pod; runc joins it by path, so it exists before the container does. */
export function netnsName(uuid: string): string {
  return `berth-${uuid}`;
}

/** Where `ip netns` keeps named network namespaces. */
export const netnsDir = '/var/run/netns';

export function netnsPath(uuid: string): string {
  return `${netnsDir}/${netnsName(uuid)}`;
}

function sliceRange(subnet: string, index: number) {
  const { rangeStart, rangeEnd, gateway } = sliceOf(index, subnet);
  return { subnet, rangeStart, rangeEnd, gateway };
}

/**
 * `slice`: the subnet slice the pod's address comes from (pod-isolation.ts), with its own
 * host-local store (pod-ipam.ts); DEL must name the same store, or host-local releases nothing.
 * `undefined`: the whole subnet and host-local's default store, as berth attached pods before slices.
 */
function networkConfig(ports: readonly PortPublish[], masquerade: Masquerade, slice: number | undefined) {
  const subnet = podSubnet();
  const range = slice === undefined ? { subnet } : sliceRange(subnet, slice);
  const portmap = {
    type: 'portmap',
    capabilities: { portMappings: true },
    snat: true,
    runtimeConfig: {
      portMappings: ports.map((p) => ({
        hostPort: p.host_port,
        containerPort: p.container_port,
        protocol: 'tcp',
      })),
    },
  };
  return {
    cniVersion: '1.0.0',
    name: cniNetworkName,
    plugins: [
      {
        type: 'bridge',
        bridge: bridgeName(),
        isGateway: true,
        ipMasq: masquerade === 'per-pod',
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[range]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: slice === undefined ? legacyIpamDataDir() : sliceIpamDataDir(slice),
        },
      },
      ...(ports.length > 0 ? [portmap] : []),
    ],
  };
}

interface CniResult {
  readonly ips?: readonly { readonly address: string }[];
  readonly interfaces?: readonly { readonly name: string; readonly sandbox?: string }[];
}

/** One plugin exec, as the CNI spec says: config on stdin, command and ids in the environment. */
interface PluginCall {
  readonly command: 'ADD' | 'DEL';
  readonly plugin: Record<string, unknown>;
  readonly env: Record<string, string>;
  readonly stdin: string;
}

interface PluginOutcome {
  readonly code: number | null;
  readonly stdout: string;
}

/**
 * Attach and detach are written once, as generators that yield the plugin execs they need and
 * get each outcome back; `runNow` drives one with blocking execs (gc, destroy), `runInBackground`
 * with child processes, so stage 1 can do other work while a plugin runs.
 */
type Steps<T> = Generator<PluginCall, T, PluginOutcome>;

function pluginPath(call: PluginCall): string {
  return join(cniPluginDir, String(call.plugin.type));
}

function runNow<T>(steps: Steps<T>): T {
  let step = steps.next();
  while (!step.done) {
    const call = step.value;
    const result = spawnSync(pluginPath(call), [], {
      env: { ...call.env, CNI_COMMAND: call.command },
      input: call.stdin,
      encoding: 'utf8',
    });
    step = steps.next({ code: result.status, stdout: result.stdout ?? '' });
  }
  return step.value;
}

/**
 * The promise comes back already handled, so a failure before its caller awaits it (the caller
 * does other work meanwhile: that is the point) is not an unhandled rejection; awaiting it still
 * throws.
 */
function runInBackground<T>(steps: Steps<T>): Promise<T> {
  const running = driveInBackground(steps);
  running.catch(() => undefined);
  return running;
}

async function driveInBackground<T>(steps: Steps<T>): Promise<T> {
  let step = steps.next();
  while (!step.done) {
    step = steps.next(await runPlugin(step.value));
  }
  return step.value;
}

/** One plugin, started through berth's addon (native-process.ts) as stage 1 starts runc. */
async function runPlugin(call: PluginCall): Promise<PluginOutcome> {
  let child: NativeChild;
  try {
    child = spawnNative(pluginPath(call), [], {
      stdio: ['pipe', 'pipe', 'null'],
      env: { ...call.env, CNI_COMMAND: call.command },
    });
  } catch {
    return { code: null, stdout: '' };
  }
  let stdout = '';
  const output = child.pipes.get(1);
  const read = new Promise<void>((resolve) => {
    if (!output) return resolve();
    output.setEncoding('utf8');
    output.on('data', (chunk: string) => {
      stdout += chunk;
    });
    output.once('close', () => resolve());
  });
  // A plugin's config is a few hundred bytes: it fits the pipe, so this write never waits.
  if (child.stdin !== undefined) endStdin(child.stdin, call.stdin);
  const [end] = await Promise.all([child.exited, read]);
  return { code: end.code, stdout };
}

function pluginEnv(uuid: string): Record<string, string> {
  return {
    CNI_CONTAINERID: uuid,
    CNI_NETNS: netnsPath(uuid),
    CNI_IFNAME: 'eth0',
    CNI_PATH: cniPluginDir,
    PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
  };
}

/**
 * What a data dir's first `--net private` pod would otherwise do before it attaches: the host's
 * firewall rules (once per boot) and the data dir's slice of the pod subnet (once per data dir,
 * loading the isolation chain). A cell does it as it starts, as kubelet and Garden set up their
 * chains at boot, so its first instance starts as fast as the next (on the 2-core machine three
 * iptables-restore execs, ~70 ms). Returns `no-plugins` where there is no CNI: nothing to prepare,
 * and a pod's attach says what is missing.
 */
export function prepareHostNetwork(dataDir: string): 'prepared' | 'no-plugins' {
  if (!existsSync(join(cniPluginDir, 'bridge'))) return 'no-plugins';
  ensurePodNetworkRules();
  podSlice(dataDir);
  return 'prepared';
}

function* attachSteps(
  uuid: string,
  dataDir: string | undefined,
  ports: readonly PortPublish[],
  masquerade: Masquerade,
): Steps<NetworkAttachment> {
  if (!existsSync(join(cniPluginDir, 'bridge'))) {
    throw new BerthError(
      'unavailable',
      `Cannot set up --net private: no CNI plugins in ${cniPluginDir} (install containernetworking-plugins)`,
    );
  }
  // Every pod, whatever its NAT: the host guard and the isolation are the bridge's (one existsSync
  // each once set up).
  ensurePodNetworkRules();
  const slice = dataDir === undefined ? undefined : podSlice(dataDir).index;
  try {
    nativeAddon().createNetns(netnsDir, netnsName(uuid));
  } catch (err) {
    // EEXIST: a retry after a crash between creating it and recording the network; use it.
    if (errnoCode(err) !== 'EEXIST')
      throw new BerthError(
        'internal',
        `Cannot create network namespace for pod ${uuid}: ${err instanceof Error ? err.message : String(err)}`,
      );
  }
  const config = networkConfig(ports, masquerade, slice);
  const env = pluginEnv(uuid);
  let prevResult: unknown;
  for (const plugin of config.plugins) {
    const stdin = JSON.stringify({
      cniVersion: config.cniVersion,
      name: config.name,
      ...plugin,
      ...(prevResult ? { prevResult } : {}),
    });
    const { code, stdout } = yield { command: 'ADD', plugin, env, stdin };
    if (code !== 0) {
      yield* detachSteps(uuid, ports, masquerade, { slice });
      let message = stdout.trim();
      try {
        const parsed = JSON.parse(stdout) as { msg?: string; details?: string };
        message = [parsed.msg, parsed.details].filter(Boolean).join(': ');
      } catch {
        // Not JSON: keep the raw text.
      }
      throw new BerthError(
        'internal',
        `Cannot attach pod ${uuid} to the network (CNI ${String(plugin.type)}): ${message}`,
      );
    }
    prevResult = JSON.parse(stdout) as unknown;
  }
  const result = prevResult as CniResult | undefined;
  const address = (result?.ips?.[0]?.address ?? '').split('/')[0] ?? '';
  const hostInterface = result?.interfaces?.find((i) => !i.sandbox && i.name !== bridgeName())?.name;
  // The address may have been another pod's a moment ago: the host must not keep sending to it.
  if (address !== '') forgetNeighbour(address, bridgeName());
  return {
    netns: netnsPath(uuid),
    address,
    ports,
    masquerade,
    ...(slice !== undefined ? { slice } : {}),
    ...(hostInterface ? { hostInterface } : {}),
  };
}

/**
 * Where a pod's address was reserved, for DEL: `{ slice: n }` as recorded at attach (network.json),
 * `{ slice: undefined }` for a pod attached in no slice; `'unrecorded'` when nothing says (a pod of
 * a berth from before slices, or a holder that died before writing network.json): the stores are
 * searched for the pod's reservation (pod-ipam.ts).
 */
export type ReservedIn = { readonly slice: number | undefined } | 'unrecorded';

/*
 * Teardown removes the netns before the bridge plugin's DEL: the kernel drops the veth pair with
 * the namespace, in the background, and the plugin, finding no netns, only releases the address
 * (as the CNI spec lets it). Deleting the veth itself, as the plugin does while the netns exists,
 * waits for the kernel to quiesce the device: ~26 of ~33 ms per pod on the development machine.
 * Pods with a NAT chain of their own (`per-pod`) keep the old order: the plugin removes that chain
 * only while the netns still exists.
 */
function* detachSteps(
  uuid: string,
  ports: readonly PortPublish[],
  masquerade: Masquerade,
  reservedIn: ReservedIn,
): Steps<void> {
  const slice = reservedIn === 'unrecorded' ? reservationSlice(uuid) : reservedIn.slice;
  const config = networkConfig(ports, masquerade, slice);
  const env = pluginEnv(uuid);
  const removeNetns = () => nativeAddon().deleteNetns(netnsPath(uuid));
  for (const plugin of [...config.plugins].reverse()) {
    if (plugin.type === 'bridge' && masquerade === 'subnet') removeNetns();
    const stdin = JSON.stringify({ cniVersion: config.cniVersion, name: config.name, ...plugin });
    yield { command: 'DEL', plugin, env, stdin };
  }
  removeNetns();
}

/**
 * Creates the pod's netns and runs CNI ADD through the plugin chain, in the data dir's slice.
 * `per-pod` masquerade is how berth attached pods before the subnet rule, and no `dataDir` how it
 * attached them before slices (the whole subnet, host-local's default store); both kept so that
 * their teardown stays testable.
 */
export function attachNetwork(
  uuid: string,
  dataDir: string | undefined,
  ports: readonly PortPublish[],
  masquerade: Masquerade = 'subnet',
): NetworkAttachment {
  return runNow(attachSteps(uuid, dataDir, ports, masquerade));
}

/** attachNetwork with the plugins run as child processes while the caller goes on. */
export function attachNetworkInBackground(
  uuid: string,
  dataDir: string,
  ports: readonly PortPublish[],
): Promise<NetworkAttachment> {
  return runInBackground(attachSteps(uuid, dataDir, ports, 'subnet'));
}

/** CNI DEL in reverse order, and the netns removed. Idempotent: safe for gc to repeat. */
export function detachNetwork(
  uuid: string,
  ports: readonly PortPublish[],
  masquerade: Masquerade,
  reservedIn: ReservedIn,
): void {
  runNow(detachSteps(uuid, ports, masquerade, reservedIn));
}

/** detachNetwork with the plugins run as child processes while the caller goes on. */
export function detachNetworkInBackground(
  uuid: string,
  ports: readonly PortPublish[],
  reservedIn: ReservedIn,
): Promise<void> {
  return runInBackground(detachSteps(uuid, ports, 'subnet', reservedIn));
}
