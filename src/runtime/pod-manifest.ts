/** What `prepare` decided about a pod, written once to `pod.json` and never changed after. */
export type NetMode = 'private' | 'host' | 'none';

export interface PodUser {
  readonly uid: number;
  readonly gid: number;
  readonly additionalGids: readonly number[];
  readonly home: string;
}

export interface PodApp {
  readonly args: readonly string[];
  readonly env: readonly string[];
  readonly cwd: string;
  readonly user: PodUser;
  /** The app's name in its pod (`--app-name`); absent in pods prepared before pods had several. */
  readonly name?: string;
  /** Where the pod's volumes appear in this app (`--mount`, `-v`); absent = none. */
  readonly mounts?: readonly AppMount[];
}

/** One more app of a pod (rkt's `---`): its own image, rootfs, process tree, user and env. */
export interface PodSideApp extends PodApp {
  readonly name: string;
  readonly image: { readonly ref: string; readonly id: string; readonly rootfs: string };
}

/**
 * A volume of the pod, resolved at prepare: `host` binds a host directory, `named` a berth-managed
 * volume's data dir (volume-store.ts, both absolute host paths checked for symlinks), `empty` a
 * directory of the pod (or a tmpfs when `tmpfsBytes` is set) that goes with it.
 */
export interface PodVolume {
  readonly name: string;
  readonly kind: 'host' | 'named' | 'empty';
  /** The host directory (host, named); absent for empty. */
  readonly source?: string;
  readonly readOnly: boolean;
  /** kind=empty only: a tmpfs of this many bytes instead of a directory on disk. */
  readonly tmpfsBytes?: number;
}

/** A volume mounted in an app at `target` (read-only if the volume or the mount says so). */
export interface AppMount {
  readonly volume: string;
  readonly target: string;
  readonly readOnly: boolean;
}

export interface PodManifest {
  readonly uuid: string;
  readonly name: string;
  readonly hostname: string;
  readonly image: { readonly ref: string; readonly id: string; readonly rootfs: string };
  readonly app: PodApp;
  readonly net: NetMode;
  /** Host ports published to container ports (`--net private` only). */
  readonly ports: readonly { readonly host_port: number; readonly container_port: number }[];
  readonly memoryBytes: number | null;
  readonly pidsLimit: number | null;
  /**
   * The size at which the pod's log rotates (pod-log.ts); it keeps at most twice this on disk.
   * Absent in pods prepared before logs rotated: they get the default.
   */
  readonly logSizeMax?: number;
  /** Labels set by upper layers (executor: lrp/task identity); berth run leaves it empty. */
  readonly labels: Readonly<Record<string, string>>;
  /**
   * Where the pod's `shared/` dir is bind-mounted read-only in the container (e.g. `/run/berth`),
   * for files the host keeps current while it runs (a cell's relations file); absent = none.
   */
  readonly sharedDir?: string;
  /** The pod's other apps, after `app` (absent or empty: a pod of one app, as before). */
  readonly sideApps?: readonly PodSideApp[];
  /** `--exit-on-first`: the first app to exit stops the others (default: the pod ends with its last). */
  readonly exitOnFirst?: boolean;
  readonly volumes?: readonly PodVolume[];
  readonly created: string;
}

/**
 * How a pod's outbound traffic is NATed: `subnet`, the one rule for all pods; `per-pod`, the CNI
 * bridge plugin's own chain, which pods attached before berth used the subnet rule have (their
 * network.json has no `masquerade`), so their CNI DEL must still ask the plugin to remove it.
 */
export type Masquerade = 'subnet' | 'per-pod';

/** Written by the stage-1 holder once the pod's network is attached (`--net private`). */
export interface PodNetwork {
  readonly address: string;
  readonly ports: readonly { readonly host_port: number; readonly container_port: number }[];
  readonly masquerade?: Masquerade;
  /** The host's end of the pod's veth pair (absent in pods attached by an older berth). */
  readonly host_interface?: string;
  /** The subnet slice of the pod's data dir (absent in pods attached before slices). */
  readonly slice?: number;
}

/** Written by the stage-1 holder once runc has started the app. */
export interface PodStarted {
  readonly started_at: string;
  readonly pid: number | null;
}

/** Written by the stage-1 holder (or its watcher) before the pod's lock drops. */
export interface PodExit {
  readonly exit_code: number | null;
  /** Copied from started.json so an exited pod is described by pod.json and exit.json alone. */
  readonly started_at?: string;
  readonly finished_at: string;
  /** Why the pod ended when it was not the app's own exit (holder killed, runc failed …). */
  readonly reason?: string;
  readonly oom_killed?: boolean;
  /** Each app's end, in the pod's app order (pods of several apps only). */
  readonly apps?: readonly AppExit[];
}

/** One app's end in a pod of several: written to `apps.json` as each ends, then into exit.json. */
export interface AppExit {
  readonly name: string;
  readonly exit_code: number | null;
  readonly started_at?: string;
  readonly finished_at: string;
  readonly reason?: string;
}

/**
 * What is left of a pod removed before its end reached the container history (a `berth run -d
 * --rm` pod, say): written by `PodRuntime.destroy`, consumed by the history (docs/history.md).
 */
export interface PodObituary {
  readonly uuid: string;
  readonly manifest: PodManifest;
  readonly started: PodStarted | undefined;
  readonly exit: PodExit;
  /** The end of the pod's log (at most 1 MiB). */
  readonly log: string;
}
