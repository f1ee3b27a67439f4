import { EventEmitter } from 'node:events';
import type { ActualLRPNetInfo } from '../bbs/index.js';
import { BerthError, NotFoundError } from '../core/index.js';
import {
  assertContainerTransition,
  type CellExecutor,
  type ContainerResource,
  type ContainerResult,
  type ContainerRunSpec,
  type ContainerState,
  type ContainerTags,
  type ExecutorCapacity,
  type ExecutorContainer,
} from '../executor/index.js';
import type { LogTail } from '../runtime/index.js';

/** How simulated containers behave; every delay in milliseconds. */
export interface SimulatedBehaviour {
  /** From `run` to RUNNING (an LRP) or to its start (a task). */
  readonly startDelayMs: number;
  /** The share of LRP containers (0…1) that crash `crashAfterMs` after they started. */
  readonly crashFraction: number;
  readonly crashAfterMs: number;
  /** The share of LRP containers (0…1) that exit with status 0 `exitAfterMs` after they started. */
  readonly exitFraction: number;
  readonly exitAfterMs: number;
  /** How long a task runs before it exits with status 0. */
  readonly taskRunMs: number;
}

export const defaultSimulatedBehaviour: SimulatedBehaviour = {
  startDelayMs: 50,
  crashFraction: 0,
  crashAfterMs: 5_000,
  exitFraction: 0,
  exitAfterMs: 5_000,
  taskRunMs: 100,
};

export interface SimulatedExecutorOptions {
  readonly capacity: ExecutorCapacity;
  readonly hostAddress: string;
  /** Where the cell keeps its files (the history journal, task output staging). */
  readonly dataDir: string;
  readonly behaviour?: Partial<SimulatedBehaviour>;
  /** Decides which containers crash or exit (injected for tests: `() => 0` makes every one). */
  readonly random?: () => number;
}

interface SimulatedRecord {
  readonly guid: string;
  state: ContainerState;
  readonly tags: ContainerTags;
  readonly resource: ContainerResource;
  spec?: ContainerRunSpec;
  result?: ContainerResult;
  exitCode?: number | null;
  netInfo?: ActualLRPNetInfo;
  finishedAt?: string;
  timer?: NodeJS.Timeout;
}

/**
 * An executor whose containers are only records and timers: the scale harness's cells host
 * hundreds of reps each, which runc pods could not. It sits below the rep's executor seam
 * (`CellExecutor`, whose real implementation `Executor` is tested with runc), keeps the seed's
 * container states and moves (`assertContainerTransition`), capacity, and the `container` event,
 * so the rep above it (claims, starts, crashes, evacuation over HTTP) is the real code.
 */
export class SimulatedExecutor
  extends EventEmitter<{ container: [ExecutorContainer] }>
  implements CellExecutor
{
  readonly #options: SimulatedExecutorOptions;
  readonly #behaviour: SimulatedBehaviour;
  readonly #random: () => number;
  readonly #containers = new Map<string, SimulatedRecord>();
  /** Containers that reached their start while starts are held (`holdStarts`). */
  #held: SimulatedRecord[] | undefined;
  #nextHostPort = 40_000;
  #stopped = false;

  constructor(options: SimulatedExecutorOptions) {
    super();
    this.#options = options;
    this.#behaviour = { ...defaultSimulatedBehaviour, ...options.behaviour };
    this.#random = options.random ?? Math.random;
  }

  get capacity(): ExecutorCapacity {
    return this.#options.capacity;
  }

  get runtime(): { readonly dataDir: string } {
    return { dataDir: this.#options.dataDir };
  }

  /** Cancels every pending timer: the containers freeze as they are (the process is going away). */
  stop(): void {
    this.#stopped = true;
    for (const record of this.#containers.values()) clearTimeout(record.timer);
  }

  list(): ExecutorContainer[] {
    return [...this.#containers.values()].map(view);
  }

  get(guid: string): ExecutorContainer | undefined {
    const record = this.#containers.get(guid);
    return record ? view(record) : undefined;
  }

  used(): ExecutorCapacity {
    let memory = 0;
    let disk = 0;
    for (const r of this.#containers.values()) {
      memory += r.resource.memory_mb;
      disk += r.resource.disk_mb;
    }
    return { memory_mb: memory, disk_mb: disk, containers: this.#containers.size };
  }

  reserve(guid: string, tags: ContainerTags, resource: ContainerResource): ExecutorContainer {
    if (this.#containers.has(guid))
      throw new BerthError('already_exists', `Container ${guid} already exists`);
    const used = this.used();
    const cap = this.#options.capacity;
    if (
      used.containers + 1 > cap.containers ||
      used.memory_mb + resource.memory_mb > cap.memory_mb ||
      used.disk_mb + resource.disk_mb > cap.disk_mb
    )
      throw new BerthError('resource_exhausted', `Cannot reserve container ${guid}: the cell is full`);
    const record: SimulatedRecord = { guid, state: 'RESERVED', tags, resource };
    this.#containers.set(guid, record);
    return view(record);
  }

  async run(guid: string, spec: ContainerRunSpec): Promise<void> {
    const record = this.#containers.get(guid);
    if (!record) throw new NotFoundError('container', guid);
    this.#move(record, 'INITIALIZING');
    record.spec = spec;
    record.netInfo = {
      address: this.#options.hostAddress,
      ports: spec.ports.map((port) => ({ container_port: port, host_port: this.#nextHostPort++ })),
    };
    this.#after(record, this.#behaviour.startDelayMs, () => {
      if (this.#held) this.#held.push(record);
      else this.#started(record);
    });
  }

  /**
   * Holds the containers that reach their start until `release`, which starts them all in one
   * turn of the event loop: what a test of starts made together needs, whatever the timers did.
   */
  holdStarts(): { readonly held: () => number; readonly release: () => void } {
    const held: SimulatedRecord[] = [];
    this.#held = held;
    return {
      held: () => held.length,
      release: () => {
        if (this.#held === held) this.#held = undefined;
        for (const record of held.splice(0)) this.#started(record);
      },
    };
  }

  #started(record: SimulatedRecord): void {
    if (record.state !== 'INITIALIZING') return;
    this.#move(record, 'CREATED');
    this.#move(record, 'RUNNING');
    const b = this.#behaviour;
    if (record.tags.kind === 'task') {
      this.#after(record, b.taskRunMs, () => this.#exit(record, 0));
      return;
    }
    const draw = this.#random();
    if (draw < b.crashFraction) this.#after(record, b.crashAfterMs, () => this.#exit(record, 137));
    else if (draw < b.crashFraction + b.exitFraction)
      this.#after(record, b.exitAfterMs, () => this.#exit(record, 0));
  }

  /** The container ended on its own: for an LRP a crash whatever the status, for a task its end. */
  #exit(record: SimulatedRecord, code: number): void {
    if (record.state !== 'RUNNING') return;
    record.exitCode = code;
    record.result = { failed: code !== 0, reason: `exited with status ${code}`, kind: 'crashed' };
    this.#complete(record);
  }

  #complete(record: SimulatedRecord): void {
    clearTimeout(record.timer);
    record.finishedAt = new Date().toISOString();
    this.#move(record, 'COMPLETED');
  }

  #after(record: SimulatedRecord, ms: number, then: () => void): void {
    if (this.#stopped) return;
    clearTimeout(record.timer);
    record.timer = setTimeout(then, ms);
  }

  #move(record: SimulatedRecord, to: ContainerState): void {
    assertContainerTransition(record.state, to, record.guid);
    record.state = to;
    if (to === 'RUNNING' || to === 'COMPLETED') this.emit('container', view(record));
  }

  async stopContainer(guid: string): Promise<void> {
    const record = this.#containers.get(guid);
    if (!record) throw new NotFoundError('container', guid);
    if (record.state === 'COMPLETED') return;
    if (record.state === 'RESERVED') record.state = 'INITIALIZING';
    record.result = { failed: false, reason: 'stopped', kind: 'shutdown' };
    this.#complete(record);
  }

  async deleteContainer(guid: string): Promise<void> {
    const record = this.#containers.get(guid);
    if (!record) return;
    clearTimeout(record.timer);
    this.#containers.delete(guid);
  }

  readLog(): LogTail {
    return { text: '', size: 0, truncated: false };
  }

  /** A simulated container has no root: a task declaring outputs fails, as one without a pod does. */
  rootLayers(): string[] | undefined {
    return undefined;
  }

  writeSharedFile(): boolean {
    return false;
  }

  spec(guid: string): ContainerRunSpec | undefined {
    return this.#containers.get(guid)?.spec;
  }
}

function view(r: SimulatedRecord): ExecutorContainer {
  return {
    guid: r.guid,
    state: r.state,
    tags: r.tags,
    resource: r.resource,
    ...(r.result ? { result: r.result } : {}),
    ...(r.exitCode !== undefined ? { exit_code: r.exitCode } : {}),
    ...(r.netInfo ? { net_info: r.netInfo } : {}),
    ...(r.finishedAt !== undefined ? { finished_at: r.finishedAt } : {}),
  };
}
