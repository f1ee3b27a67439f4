import { EventEmitter } from 'node:events';
import { closeSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { ActualLRPNetInfo, PortMapping } from '../bbs/index.js';
import { BerthError, ConcurrencyGate, isNotFound, NotFoundError, settledWithin } from '../core/index.js';
import { readStopRequest, writeStopRequest } from '../history/index.js';
import {
  defaultLogTailBytes,
  ImageUnavailableError,
  type LogTail,
  type PodInfo,
  type PodRuntime,
  readLogTail,
} from '../runtime/index.js';
import { containerLabel, containerPrepareOptions, resolveSidecarImages } from './container-pod-options.js';
import type { ContainerRunSpec } from './container-run-spec.js';
import {
  assertContainerTransition,
  type ContainerResource,
  type ContainerResult,
  type ContainerState,
  type ContainerTags,
  containerResult,
  type ExecutorContainer,
} from './container-state.js';
import type { ExecutorCapacity, ExecutorOptions } from './executor-options.js';
import { HostPortPool } from './host-port-pool.js';
import { runMonitorLoop } from './monitor-loop.js';
import { PodWorker } from './pod-worker.js';
import { readResultFile } from './task-result-file.js';

export type { ExecutorCapacity, ExecutorOptions };

interface Record_ {
  guid: string;
  state: ContainerState;
  tags: ContainerTags;
  resource: ContainerResource;
  spec?: ContainerRunSpec;
  podUuid?: string;
  result?: ContainerResult;
  taskResult?: string;
  exitCode?: number | null;
  netInfo?: ActualLRPNetInfo;
  createdAt: number;
  stopRequested: boolean;
  adopted?: boolean;
  finishedAt?: string;
  /** Its holder's end is watched (started by this process): the pod poll leaves it alone till then. */
  exitWatched?: boolean;
  /** Started by this process: resolves when its holder has ended, its teardown done. */
  holderGone?: Promise<void>;
  /** Its apps or holder ended before the start returned: taken once CREATED (and RUNNING). */
  endedWhileStarting?: 'apps' | 'holder';
}

/**
 * The executor of seed 002: containers RESERVED → INITIALIZING → CREATED → RUNNING → COMPLETED
 * (moves checked against the seed's table), each one a runtime pod. It tracks capacity, runs
 * monitors, and emits a `container` event when a container becomes RUNNING or COMPLETED. Pods
 * carry the container's identity as labels, so a restarted executor finds its containers again.
 */
export class Executor extends EventEmitter<{ container: [ExecutorContainer] }> {
  readonly #options: ExecutorOptions;
  readonly #containers = new Map<string, Record_>();
  readonly #hostPorts: HostPortPool;
  #pollTimer: NodeJS.Timeout | undefined;
  readonly #monitors = new Map<string, NodeJS.Timeout>();
  /** Pods are prepared and removed on a worker thread, off the event loop that starts containers. */
  readonly #pods: PodWorker;
  readonly #starts: ConcurrencyGate;

  constructor(options: ExecutorOptions) {
    super();
    this.#options = options;
    this.#hostPorts = new HostPortPool(options.portRange);
    this.#pods = new PodWorker(options.runtime.dataDir);
    this.#starts = new ConcurrencyGate(options.maxConcurrentStarts ?? availableParallelism());
  }

  get runtime(): PodRuntime {
    return this.#options.runtime;
  }

  /** Rebuilds containers from the pods on disk and starts watching for exits. */
  start(): void {
    this.#pods.warm();
    for (const pod of this.#options.runtime.store.list()) this.#adopt(pod);
    this.#pollTimer = setInterval(() => this.#pollPods(), this.#options.pollIntervalMs ?? 1000);
    this.#pollTimer.unref();
  }

  /** Resolves (never rejects) once `start`'s warm-up is over (`PodWorker.warm`). */
  warmedUp(): Promise<void> {
    return this.#pods.warmedUp;
  }

  stop(): void {
    clearInterval(this.#pollTimer);
    for (const timer of this.#monitors.values()) clearTimeout(timer);
    this.#monitors.clear();
    void this.#pods.close();
  }

  #adopt(pod: PodInfo): void {
    const labels = pod.manifest?.labels ?? {};
    const raw = labels[containerLabel];
    if (!raw || pod.state === 'exited-garbage' || pod.state === 'garbage' || pod.state === 'deleting') return;
    const saved = JSON.parse(raw) as {
      guid: string;
      tags: ContainerTags;
      resource: ContainerResource;
      spec: ContainerRunSpec;
    };
    const record: Record_ = {
      guid: saved.guid,
      state: 'INITIALIZING',
      tags: saved.tags,
      resource: saved.resource,
      spec: saved.spec,
      podUuid: pod.uuid,
      createdAt: Date.now(),
      stopRequested: readStopRequest(this.#options.runtime.store.path(pod)) !== undefined,
      adopted: true,
    };
    this.#hostPorts.markTaken(pod.manifest?.ports ?? []);
    if (pod.network) record.netInfo = this.#netInfo(pod.network.ports);
    this.#containers.set(record.guid, record);
    if (pod.state === 'running') {
      record.state = 'RUNNING';
    } else if (pod.state === 'exited') {
      this.#complete(record, pod);
    } else {
      // Prepared or failed prepare: the start never happened; report it as a crash so the rep
      // restarts the instance instead of waiting for it forever.
      record.state = 'COMPLETED';
      record.result = {
        failed: true,
        reason: 'the cell restarted before the container started',
        kind: 'crashed',
      };
    }
  }

  list(): ExecutorContainer[] {
    return [...this.#containers.values()].map((r) => this.#view(r));
  }

  get(guid: string): ExecutorContainer | undefined {
    const record = this.#containers.get(guid);
    return record ? this.#view(record) : undefined;
  }

  #view(r: Record_): ExecutorContainer {
    return {
      guid: r.guid,
      state: r.state,
      tags: r.tags,
      resource: r.resource,
      ...(r.result ? { result: r.result } : {}),
      ...(r.taskResult !== undefined ? { task_result: r.taskResult } : {}),
      ...(r.exitCode !== undefined ? { exit_code: r.exitCode } : {}),
      ...(r.netInfo ? { net_info: r.netInfo } : {}),
      ...(r.adopted ? { adopted: true } : {}),
      ...(r.finishedAt !== undefined ? { finished_at: r.finishedAt } : {}),
    };
  }

  /** Resources held by every container in any state until it is deleted. */
  used(): ExecutorCapacity {
    let memory = 0;
    let disk = 0;
    for (const r of this.#containers.values()) {
      memory += r.resource.memory_mb;
      disk += r.resource.disk_mb;
    }
    return { memory_mb: memory, disk_mb: disk, containers: this.#containers.size };
  }

  get capacity(): ExecutorCapacity {
    return this.#options.capacity;
  }

  /** RESERVED: allocates resources, or refuses with resource_exhausted naming what is short. */
  reserve(guid: string, tags: ContainerTags, resource: ContainerResource): ExecutorContainer {
    if (this.#containers.has(guid))
      throw new BerthError('already_exists', `Container ${guid} already exists`);
    const used = this.used();
    const cap = this.#options.capacity;
    const short =
      used.containers + 1 > cap.containers
        ? `containers (${cap.containers} max)`
        : used.memory_mb + resource.memory_mb > cap.memory_mb
          ? `memory (${cap.memory_mb - used.memory_mb} MB free, ${resource.memory_mb} MB asked)`
          : used.disk_mb + resource.disk_mb > cap.disk_mb
            ? `disk (${cap.disk_mb - used.disk_mb} MB free, ${resource.disk_mb} MB asked)`
            : undefined;
    if (short)
      throw new BerthError('resource_exhausted', `Cannot reserve container ${guid}: not enough ${short}`);
    const record: Record_ = {
      guid,
      state: 'RESERVED',
      tags,
      resource,
      createdAt: Date.now(),
      stopRequested: false,
    };
    this.#containers.set(guid, record);
    return this.#view(record);
  }

  #move(record: Record_, to: ContainerState): void {
    assertContainerTransition(record.state, to, record.guid);
    record.state = to;
    if (to === 'RUNNING' || to === 'COMPLETED') this.emit('container', this.#view(record));
  }

  #netInfo(ports: readonly { host_port: number; container_port: number }[]): ActualLRPNetInfo {
    return {
      address: this.#options.hostAddress,
      ports: ports.map((p) => ({ container_port: p.container_port, host_port: p.host_port })),
    };
  }

  /**
   * RESERVED → INITIALIZING → CREATED (pod started) → RUNNING once the monitor passes (at once
   * without a monitor). Failures on the way complete the container as crashed, never throw:
   * the rep learns everything from the container's state.
   */
  async run(guid: string, spec: ContainerRunSpec): Promise<void> {
    const record = this.#containers.get(guid);
    if (!record) throw new NotFoundError('container', guid);
    this.#move(record, 'INITIALIZING');
    record.spec = spec;
    let mappings: PortMapping[] = [];
    try {
      mappings = this.#hostPorts.take(spec.ports);
      const image = await this.#options.runtime.resolveImage(spec.image);
      const sideImages = await resolveSidecarImages(this.#options.runtime, spec.sidecars);
      // Prepared and started through the gate: a burst of starts beyond the machine's cores only
      // makes each of them slower (see ExecutorOptions.maxConcurrentStarts).
      const prepared = await this.#starts.run(async () => {
        // Deleted while it waited its turn: nothing was made.
        if (record.state !== 'INITIALIZING') return undefined;
        const pod = await this.#pods.prepare(
          spec.image,
          image,
          sideImages,
          containerPrepareOptions(record, spec, mappings, this.#options.logSizeMax),
        );
        record.podUuid = pod.location.uuid;
        if (record.state !== 'INITIALIZING') {
          // Deleted while preparing: leave the pod to gc as a failed prepare.
          closeSync(pod.lockFd);
          return undefined;
        }
        const runtime = this.#options.runtime;
        if (!runtime.store.move(pod.location, 'run'))
          throw new BerthError('internal', `Pod ${pod.location.uuid} vanished`);
        record.exitWatched = true;
        let holderGone = () => {};
        record.holderGone = new Promise<void>((resolve) => {
          holderGone = resolve;
        });
        await runtime
          .startDetached({ uuid: pod.location.uuid, phase: 'run' }, pod.lockFd, {
            onAppsExited: () => this.#onAppsExited(guid),
            onExit: () => {
              holderGone();
              // A holder killed while its app runs on: the pod reads running; the poll takes over.
              record.exitWatched = false;
              this.#onPodExit(guid);
            },
          })
          .catch((err: unknown) => {
            holderGone();
            record.exitWatched = false;
            throw err;
          });
        return pod;
      });
      if (prepared === undefined) return;
      const runtime = this.#options.runtime;
      const info = runtime.status(prepared.location.uuid);
      record.netInfo = this.#netInfo(info.network?.ports ?? mappings);
      if (record.state !== 'INITIALIZING') {
        // Deleted or stopped while its pod was starting: the pod must not outlive the container.
        // catch-all: a pod that will not stop or go is left to gc, which collects exited pods.
        await runtime.stop(prepared.location.uuid, 0).catch(() => undefined);
        if (!this.#containers.has(guid))
          // catch-all: as above.
          await this.#pods.remove(prepared.location.uuid).catch(() => undefined);
        return;
      }
      this.#move(record, 'CREATED');
      this.#scheduleMonitor(record, info.network?.address ?? '127.0.0.1');
      if (record.endedWhileStarting === 'apps') this.#onAppsExited(guid);
      else if (record.endedWhileStarting === 'holder') this.#onPodExit(guid);
    } catch (err) {
      this.#hostPorts.release(mappings);
      if (record.state === 'INITIALIZING' || record.state === 'CREATED') {
        record.result = {
          failed: true,
          reason: err instanceof Error ? err.message : String(err),
          kind: err instanceof ImageUnavailableError ? 'no-image' : 'crashed',
        };
        this.#move(record, 'COMPLETED');
      }
    }
  }

  /** The monitor's loop (monitor-loop.ts); no monitor: RUNNING at once. */
  #scheduleMonitor(record: Record_, podAddress: string): void {
    const monitor = record.spec?.monitor;
    if (!monitor) {
      this.#move(record, 'RUNNING');
      return;
    }
    runMonitorLoop({
      monitor,
      address: podAddress,
      startTimeoutS: record.spec?.start_timeout_s ?? 60,
      startupIntervalMs: this.#options.monitorIntervalMs ?? 500,
      createdAt: record.createdAt,
      pod: () =>
        record.podUuid
          ? { uuid: record.podUuid, runcRoot: this.#options.runtime.store.dirs.runc }
          : undefined,
      live: () => record.state === 'CREATED' || record.state === 'RUNNING',
      setTimer: (timer) => {
        if (timer) this.#monitors.set(record.guid, timer);
        else this.#monitors.delete(record.guid);
      },
      onRunning: () => this.#move(record, 'RUNNING'),
      onKill: (reason) => this.#kill(record, reason),
    });
  }

  /** The monitor gave up: stop the pod; its exit completes the container as crashed. */
  async #kill(record: Record_, reason: string): Promise<void> {
    record.result = { failed: true, reason, kind: 'crashed' };
    // catch-all: a pod that will not stop now still ends; its exit or the poll completes the container.
    if (record.podUuid) await this.#options.runtime.stop(record.podUuid, 0).catch(() => undefined);
  }

  #onPodExit(guid: string): void {
    const record = this.#containers.get(guid);
    if (!record?.podUuid || record.state === 'COMPLETED') return;
    if (record.state === 'INITIALIZING') {
      record.endedWhileStarting = 'holder';
      return;
    }
    try {
      const info = this.#options.runtime.status(record.podUuid);
      if (info.state !== 'running') this.#complete(record, info);
    } catch {
      // catch-all: the pod was removed meanwhile (delete), or its status is unreadable for now:
      // nothing to report this time; the next poll looks again.
    }
  }

  /**
   * The holder says the apps exited and exit.json is written: the container completes now, while
   * the holder still tears the pod down (CNI DEL, cgroup) under its lock; a deletion waits for that
   * (`holderGone`). Saves a task's completion and a crash's restart that teardown.
   */
  #onAppsExited(guid: string): void {
    const record = this.#containers.get(guid);
    if (!record?.podUuid || record.state === 'COMPLETED') return;
    if (record.state === 'INITIALIZING') {
      record.endedWhileStarting ??= 'apps';
      return;
    }
    try {
      const info = this.#options.runtime.status(record.podUuid);
      const exit = this.#options.runtime.store.readExit(info);
      if (exit) this.#complete(record, { ...info, exit });
    } catch {
      // catch-all: unreadable for now: the holder's end, which follows, completes the container.
    }
  }

  #pollPods(): void {
    for (const record of this.#containers.values()) {
      if (record.podUuid && !record.exitWatched && (record.state === 'CREATED' || record.state === 'RUNNING'))
        this.#onPodExit(record.guid);
    }
  }

  /** Any state → COMPLETED with the result the pod's exit implies. */
  #complete(record: Record_, pod: PodInfo): void {
    clearTimeout(this.#monitors.get(record.guid));
    this.#monitors.delete(record.guid);
    const code = pod.exit?.exit_code ?? null;
    record.exitCode = code;
    if (pod.exit?.finished_at) record.finishedAt = pod.exit.finished_at;
    if (!record.result) {
      // Asked by the rep (record.stopRequested), or by a user's `berth stop` of the pod (its marker).
      const asked =
        readStopRequest(this.#options.runtime.store.path(pod)) ??
        (record.stopRequested ? { user: null, at: null } : undefined);
      record.result = containerResult(pod.exit, asked);
    }
    if (record.spec?.result_file) {
      record.taskResult = readResultFile(this.#options.runtime.store, pod, record.spec.result_file);
    }
    if (record.state === 'COMPLETED') return;
    // Adoption after a restart may find a pod that exited before it was ever seen running.
    if (record.state === 'RESERVED') record.state = 'INITIALIZING';
    this.#move(record, 'COMPLETED');
  }

  /**
   * The end of what the container's app wrote to stdout and stderr (its pod's log), for
   * finalization: at most `maxBytes`, never the whole log, which a flooding app makes too big for
   * the cell's memory (or for a string at all).
   */
  readLog(guid: string, maxBytes = defaultLogTailBytes): LogTail {
    const record = this.#containers.get(guid);
    if (!record?.podUuid) return { text: '', size: 0, truncated: false };
    return readLogTail(this.#options.runtime.logDir(record.podUuid).dir, maxBytes);
  }

  /** The layers of a container's root, top first (task outputs walk them); undefined without a pod. */
  rootLayers(guid: string): string[] | undefined {
    const podUuid = this.#containers.get(guid)?.podUuid;
    return podUuid
      ? this.#options.runtime.store.rootLayers(this.#options.runtime.status(podUuid))
      : undefined;
  }

  /** Replaces a file in a running container's shared dir; false when it has no pod (yet, or any more). */
  writeSharedFile(guid: string, name: string, content: string): boolean {
    const record = this.#containers.get(guid);
    if (!record?.podUuid || record.spec?.shared_files === undefined) return false;
    try {
      this.#options.runtime.writeSharedFile(record.podUuid, name, content);
      return true;
    } catch (err) {
      // The pod moved on (exited and was collected) between the check and the write.
      if (isNotFound(err)) return false;
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  /** What a container was launched with, for its history record. */
  spec(guid: string): ContainerRunSpec | undefined {
    return this.#containers.get(guid)?.spec;
  }

  /** Asks a container to stop; its completion then reads `shutdown`, not `crashed`. */
  async stopContainer(guid: string): Promise<void> {
    const record = this.#containers.get(guid);
    if (!record) throw new NotFoundError('container', guid);
    record.stopRequested = true;
    if (record.state === 'RESERVED' || record.state === 'INITIALIZING') {
      record.result = { failed: false, reason: 'stopped before it started', kind: 'shutdown' };
      if (record.state === 'RESERVED') record.state = 'INITIALIZING';
      this.#move(record, 'COMPLETED');
      return;
    }
    if (record.state === 'COMPLETED' || !record.podUuid) return;
    const path = this.#options.runtime.store.path(this.#options.runtime.store.locate(record.podUuid));
    writeStopRequest(path, { user: null, at: null });
    await this.#options.runtime
      .stop(record.podUuid, this.#options.stopTimeoutMs ?? 10_000)
      // catch-all: whether it stopped is read from the pod right below.
      .catch(() => undefined);
    this.#onPodExit(guid);
  }

  /** Deletes a container in any state: kills its pod if needed and removes it from disk. */
  async deleteContainer(guid: string): Promise<void> {
    const record = this.#containers.get(guid);
    if (!record) return;
    clearTimeout(this.#monitors.get(guid));
    this.#monitors.delete(guid);
    const wasActive = record.state !== 'COMPLETED';
    record.state = 'COMPLETED';
    record.result ??= { failed: false, reason: 'deleted', kind: 'shutdown' };
    if (record.podUuid) {
      const runtime = this.#options.runtime;
      try {
        if (wasActive && runtime.status(record.podUuid).state === 'running') {
          record.stopRequested = true;
          await runtime.stop(record.podUuid, 0);
        }
        // Completed when its apps exited: the holder may still be tearing the pod down. Past 30 s
        // the removal is refused as for a running pod, and tried again later.
        if (record.holderGone) await settledWithin(record.holderGone, 30_000);
        await this.#pods.remove(record.podUuid);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      this.#hostPorts.release(record.netInfo?.ports ?? []);
    }
    this.#containers.delete(guid);
  }
}
