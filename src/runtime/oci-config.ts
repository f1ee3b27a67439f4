import { join } from 'node:path';
import { netnsPath } from './cni-network.js';
import { overlayOptions } from './mounts.js';
import { appCgroupPath } from './pod-cgroup.js';
import { podFiles } from './pod-dirs.js';
import type { PodManifest } from './pod-manifest.js';
import { defaultSeccompProfile } from './seccomp-profile.js';

/**
 * containerd's default OCI spec capability set (what "the OCI default set" means in practice for
 * docker, containerd and CRI): enough for ordinary apps (chown, bind low ports, setuid) and none
 * of the admin ones (SYS_ADMIN, NET_ADMIN, SYS_PTRACE …).
 */
export const defaultCapabilities = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FSETID',
  'CAP_FOWNER',
  'CAP_MKNOD',
  'CAP_NET_RAW',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETFCAP',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_SYS_CHROOT',
  'CAP_KILL',
  'CAP_AUDIT_WRITE',
] as const;

const maskedPaths = [
  '/proc/acpi',
  '/proc/asound',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
];

const readonlyPaths = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

interface OciMount {
  readonly destination: string;
  readonly type: string;
  readonly source: string;
  readonly options?: readonly string[];
}

function standardMounts(): OciMount[] {
  return [
    { destination: '/proc', type: 'proc', source: 'proc' },
    {
      destination: '/dev',
      type: 'tmpfs',
      source: 'tmpfs',
      options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'],
    },
    {
      destination: '/dev/pts',
      type: 'devpts',
      source: 'devpts',
      options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'],
    },
    {
      destination: '/dev/shm',
      type: 'tmpfs',
      source: 'shm',
      options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'],
    },
    { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
    {
      destination: '/sys/fs/cgroup',
      type: 'cgroup',
      source: 'cgroup',
      options: ['nosuid', 'noexec', 'nodev', 'relatime', 'ro'],
    },
  ];
}

/**
 * The OCI runtime config for a pod. The pod directory is the bundle, so the paths here are
 * relative to it: the pod keeps working when gc renames its directory. The one exception is the
 * root overlay, whose options runc passes to the kernel as they are: they name `runDir`, where
 * the pod's directory is whenever runc starts it (a pod runs only from run/). The lock fd is not
 * in the config; runc is told to pass it with `--preserve-fds`.
 */
export function buildOciConfig(manifest: PodManifest, runDir: string): Record<string, unknown> {
  const caps = [...defaultCapabilities];
  const namespaces: { type: string; path?: string }[] = [
    { type: 'pid' },
    { type: 'ipc' },
    { type: 'uts' },
    { type: 'mount' },
  ];
  // private: the netns stage 1 creates and attaches with CNI; none: a fresh one with only lo.
  if (manifest.net === 'private') namespaces.push({ type: 'network', path: netnsPath(manifest.uuid) });
  if (manifest.net === 'none') namespaces.push({ type: 'network' });
  const resources: Record<string, unknown> = {
    devices: [{ allow: false, access: 'rwm' }],
  };
  // The pod's own cgroup (the parent of this one, pod-cgroup.ts) gets the same limit, so an OOM
  // kill can still be read there once runc has deleted this one.
  if (manifest.memoryBytes !== null)
    resources.memory = { limit: manifest.memoryBytes, swap: manifest.memoryBytes };
  if (manifest.pidsLimit !== null) resources.pids = { limit: manifest.pidsLimit };
  const bindFile = (destination: string, source: string): OciMount => ({
    destination,
    type: 'bind',
    source,
    options: ['rbind', 'rprivate', 'ro'],
  });
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: {
        uid: manifest.app.user.uid,
        gid: manifest.app.user.gid,
        ...(manifest.app.user.additionalGids.length > 0
          ? { additionalGids: manifest.app.user.additionalGids }
          : {}),
      },
      args: manifest.app.args,
      env: manifest.app.env,
      cwd: manifest.app.cwd,
      capabilities: { bounding: caps, effective: caps, permitted: caps },
      noNewPrivileges: false,
    },
    root: { path: podFiles.rootfs, readonly: false },
    hostname: manifest.hostname,
    mounts: [
      // runc mounts this over the (empty) root.path inside the container's mount namespace.
      {
        destination: '/',
        type: 'overlay',
        source: 'overlay',
        options: [
          overlayOptions(manifest.image.rootfs, join(runDir, podFiles.upper), join(runDir, podFiles.work)),
        ],
      },
      ...standardMounts(),
      bindFile('/etc/hosts', podFiles.hosts),
      bindFile('/etc/hostname', podFiles.hostname),
      bindFile('/etc/resolv.conf', podFiles.resolvConf),
      ...(manifest.sharedDir ? [bindFile(manifest.sharedDir, podFiles.shared)] : []),
    ],
    linux: {
      cgroupsPath: appCgroupPath(manifest.uuid),
      namespaces,
      resources,
      maskedPaths,
      readonlyPaths,
      seccomp: defaultSeccompProfile(),
      // The seccomp profile refuses raw sockets, so ping needs the ICMP datagram socket, which a
      // new network namespace allows no group (kernel default "1 0"); podman sets it the same way.
      // A host-network pod shares the host's setting and may not change it.
      ...(manifest.net === 'host' ? {} : { sysctl: { 'net.ipv4.ping_group_range': '0 2147483647' } }),
    },
  };
}
