import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError } from '../core/index.js';

/**
 * `--net private`: each pod gets its own network namespace attached to a host bridge through
 * the standard CNI plugins from Debian's containernetworking-plugins (bridge + host-local IPAM +
 * portmap). berth execs the plugins itself, as the CNI spec describes, so no CNI daemon or
 * library is involved, and published ports are real host ports (iptables DNAT, also on 127.0.0.1).
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
}

/** The named netns of a pod; runc joins it by path, so it exists before the container does. */
export function netnsName(uuid: string): string {
  return `berth-${uuid}`;
}

export function netnsPath(uuid: string): string {
  return `/var/run/netns/${netnsName(uuid)}`;
}

function networkConfig(ports: readonly PortPublish[]) {
  const subnet = process.env.BERTH_SUBNET ?? '10.213.0.0/16';
  return {
    cniVersion: '1.0.0',
    name: 'berth',
    plugins: [
      {
        type: 'bridge',
        bridge: process.env.BERTH_BRIDGE ?? 'berth0',
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet }]],
          routes: [{ dst: '0.0.0.0/0' }],
          // The bridge and its subnet are the host's, shared by every data dir on it, so the
          // address allocations must be too (host-local's default, /var/lib/cni/networks).
        },
      },
      {
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
      },
    ],
  };
}

interface CniResult {
  readonly ips?: readonly { readonly address: string }[];
}

/** Execs one plugin as the CNI spec says: config on stdin, command and ids in the environment. */
function execPlugin(
  command: 'ADD' | 'DEL',
  plugin: Record<string, unknown>,
  env: Record<string, string>,
  stdin: string,
): { code: number | null; stdout: string } {
  const result = spawnSync(join(cniPluginDir, String(plugin.type)), [], {
    env: { ...env, CNI_COMMAND: command },
    input: stdin,
    encoding: 'utf8',
  });
  return { code: result.status, stdout: result.stdout ?? '' };
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

/** Creates the pod's netns and runs CNI ADD through the plugin chain. */
export function attachNetwork(uuid: string, ports: readonly PortPublish[]): NetworkAttachment {
  if (!existsSync(join(cniPluginDir, 'bridge'))) {
    throw new BerthError(
      'unavailable',
      `Cannot set up --net private: no CNI plugins in ${cniPluginDir} (install containernetworking-plugins)`,
    );
  }
  const add = spawnSync('ip', ['netns', 'add', netnsName(uuid)], { encoding: 'utf8' });
  if (add.status !== 0 && !/File exists/.test(add.stderr)) {
    throw new BerthError('internal', `Cannot create network namespace for pod ${uuid}: ${add.stderr.trim()}`);
  }
  const config = networkConfig(ports);
  const env = pluginEnv(uuid);
  let prevResult: unknown;
  for (const plugin of config.plugins) {
    const stdin = JSON.stringify({
      cniVersion: config.cniVersion,
      name: config.name,
      ...plugin,
      ...(prevResult ? { prevResult } : {}),
    });
    const { code, stdout } = execPlugin('ADD', plugin, env, stdin);
    if (code !== 0) {
      detachNetwork(uuid, ports);
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
  const address = ((prevResult as CniResult | undefined)?.ips?.[0]?.address ?? '').split('/')[0] ?? '';
  return { netns: netnsPath(uuid), address, ports };
}

/** CNI DEL in reverse order, then removes the netns. Idempotent: safe for gc to repeat. */
export function detachNetwork(uuid: string, ports: readonly PortPublish[]): void {
  const config = networkConfig(ports);
  const env = pluginEnv(uuid);
  for (const plugin of [...config.plugins].reverse()) {
    const stdin = JSON.stringify({ cniVersion: config.cniVersion, name: config.name, ...plugin });
    execPlugin('DEL', plugin, env, stdin);
  }
  if (existsSync(netnsPath(uuid))) spawnSync('ip', ['netns', 'del', netnsName(uuid)]);
}
