import { join } from 'node:path';
import { netnsPath } from './cni-network.js';
import { overlayOptions } from './mounts.js';
import { type PodAppRun, podApps } from './pod-apps.js';
import { appCgroupPath } from './pod-cgroup.js';
import { emptyVolumeDir, podFiles } from './pod-dirs.js';
import type { PodManifest, PodVolume } from './pod-manifest.js';
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
export function buildOciConfig(
  manifest: PodManifest,
  runDir: string,
  app: PodAppRun = podApps(manifest)[0] as PodAppRun,
): Record<string, unknown> {
  // The pod's own files, as a path relative to this app's bundle (the pod dir, or apps/<name>).
  const podFile = (file: string) => (app.bundle === '' ? file : join('..', '..', file));
  const bundleDir = join(runDir, app.bundle);
  const caps = [...defaultCapabilities];
  const namespaces: { type: string; path?: string }[] = [
    { type: 'pid' },
    { type: 'ipc' },
    { type: 'uts' },
    { type: 'mount' },
  ];
  // private: the netns stage 1 creates and attaches with CNI; none: a fresh one with only lo.
  // A pod of several apps: stage 1 points ipc, uts (and a `none` network) at the namespaces the
  // apps share, once they exist (shareNamespaces); the pid and mount namespaces stay each app's.
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
        uid: app.app.user.uid,
        gid: app.app.user.gid,
        ...(app.app.user.additionalGids.length > 0 ? { additionalGids: app.app.user.additionalGids } : {}),
      },
      args: app.app.args,
      env: app.app.env,
      cwd: app.app.cwd,
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
          overlayOptions(app.image.rootfs, join(bundleDir, podFiles.upper), join(bundleDir, podFiles.work)),
        ],
      },
      ...standardMounts(),
      bindFile('/etc/hosts', podFile(podFiles.hosts)),
      bindFile('/etc/hostname', podFile(podFiles.hostname)),
      bindFile('/etc/resolv.conf', podFile(podFiles.resolvConf)),
      ...(manifest.sharedDir ? [bindFile(manifest.sharedDir, podFile(podFiles.shared))] : []),
      ...volumeMounts(manifest.volumes ?? [], app, runDir),
    ],
    linux: {
      cgroupsPath: appCgroupPath(manifest.uuid, app.index === 0 ? undefined : app.name),
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

/** The app's volume mounts: host and named volumes by their checked host path, empty ones from the pod dir. */
function volumeMounts(volumes: readonly PodVolume[], app: PodAppRun, runDir: string): OciMount[] {
  return (app.app.mounts ?? []).map((mount) => {
    const volume = volumes.find((v) => v.name === mount.volume);
    const source = volume?.source ?? emptyVolumeDir(runDir, mount.volume);
    return {
      destination: mount.target,
      type: 'bind',
      source,
      options: ['rbind', 'rprivate', mount.readOnly ? 'ro' : 'rw', 'nosuid', 'nodev'],
    };
  });
}

/**
 * Points an app's ipc and uts namespaces (and its network's, when the pod's is not the CNI one)
 * at the pod's shared ones: every app of a pod of several joins them.
 */
export function shareNamespaces(
  config: Record<string, unknown>,
  paths: { readonly ipc: string; readonly uts: string; readonly network?: string },
): Record<string, unknown> {
  const linux = config.linux as { namespaces: { type: string; path?: string }[] };
  const shared: Record<string, string | undefined> = paths;
  linux.namespaces = linux.namespaces.map((ns) => {
    const path = shared[ns.type];
    return path === undefined ? ns : { type: ns.type, path };
  });
  return config;
}
