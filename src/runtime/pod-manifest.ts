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
