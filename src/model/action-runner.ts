import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { describeError, runLoop, type ServiceLogger, sleep, Wakeup } from '../core/index.js';
import type { ActionRecord, ActionWork, SqlSystemStore } from './sql-system-store.js';

export type DeployerLog = (message: string, fields?: Record<string, unknown>) => void;

/** What a running action is given: stop-aware waits and its log. */
export interface ActionControl {
  /** Throws `ActionStopped` once the server is stopping; called between steps. */
  checkpoint(): void;
  /** Waits one poll interval (cut short by a stop), then checkpoints. */
  poll(): Promise<void>;
  /** Appends a line to the action's log (seen in `GET /v1/deploys/{id}`). */
  note(line: string): Promise<void>;
}

/** Executes one accepted action to its end; throwing fails it with the error's message as reason. */
export type ActionExecutor = (work: ActionWork, control: ActionControl) => Promise<void>;

export interface ActionRunnerOptions {
  readonly systems: SqlSystemStore;
  readonly execute: ActionExecutor;
  /** This server's identity in action rows; default host:pid:random. */
  readonly owner?: string;
  /** How often a running action polls (rolling updates, teardown). */
  readonly pollMs: number;
  readonly heartbeatMs: number;
  /** A running action whose owner has not heartbeaten for this long is taken over. */
  readonly ownerTtlMs: number;
  /** Whether an owner is known dead without waiting for its TTL (default: same host, pid gone). */
  readonly ownerDead?: (owner: string) => boolean;
  readonly log: DeployerLog;
  /** Awaited before an accepted action executes: tests hold an action (and its locks) open with it. */
  readonly gate?: (action: ActionRecord) => Promise<void>;
  /**
   * Calls the listener after BBS events committed in this process (instances claimed, started,
   * crashed): a waiting action polls again at once instead of at its next interval.
   */
  readonly onEvents?: (listener: () => void) => () => void;
}

/**
 * After a wake-up, an action still waits this long: a burst of events (a large rollout's instances
 * starting) makes one round, not one each; each round reads the system's instances and runs the
 * system agent's pass.
 */
const minPollGapMs = 200;

/** Thrown at a checkpoint of a stopping server: the action stays running and ours until taken over. */
export class ActionStopped extends Error {
  constructor() {
    super('stopping');
    this.name = 'ActionStopped';
  }
}

export function defaultOwner(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

export function defaultOwnerDead(owner: string): boolean {
  // Owners are host:pid:nonce. Only a process on this host can be checked without waiting.
  const [host, pidText] = owner.split(':');
  const pid = Number(pidText);
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Action ownership (seed 004): runs accepted actions in this server, heartbeats them, takes over
 * running actions whose owner died, and ends each (with its locks released) in one transaction.
 * What an action does is the executor's business.
 */
export class ActionRunner {
  readonly owner: string;
  readonly #systems: SqlSystemStore;
  readonly #execute: ActionExecutor;
  readonly #options: ActionRunnerOptions;
  readonly #ownerDead: (owner: string) => boolean;
  readonly #log: DeployerLog;
  readonly #gate: (action: ActionRecord) => Promise<void>;
  readonly #running = new Map<string, Promise<void>>();
  readonly #stopping = new AbortController();
  /** The doorbells of the actions waiting now, rung by BBS events. */
  readonly #waiting = new Set<Wakeup>();
  #unsubscribe: () => void = () => {};
  #loops: Promise<void>[] = [];

  constructor(options: ActionRunnerOptions) {
    this.#options = options;
    this.#systems = options.systems;
    this.#execute = options.execute;
    this.owner = options.owner ?? defaultOwner();
    this.#ownerDead = options.ownerDead ?? defaultOwnerDead;
    this.#log = options.log;
    this.#gate = options.gate ?? (async () => {});
    if (options.onEvents)
      this.#unsubscribe = options.onEvents(() => {
        for (const w of this.#waiting) w.wake();
      });
  }

  /** Recovers actions whose owner died, then keeps heartbeating and watching for more. */
  async start(): Promise<void> {
    // Never block (or fail) start-up on an old action: a resumed one that cannot run fails on its own.
    await this.recover().catch((err) => this.#log('recovery failed', { err: describeError(err) }));
    const signal = this.#stopping.signal;
    const every = this.#options.heartbeatMs;
    // A fixed period even after failures: backing off past the owner TTL would hand our actions
    // to another server during a short database outage.
    const backoff = { initialMs: every, capMs: every };
    const loop = async (name: string, work: () => Promise<unknown>) => {
      const round = async () => {
        await work();
      };
      // start() has just recovered: the first round of each loop is one period away.
      await sleep(every, signal);
      await runLoop({ name, signal, intervalMs: every, backoff, logger: this.#loopLogger(), round });
    };
    this.#loops = [
      loop('heartbeat', () => this.#systems.heartbeat(this.owner)),
      loop('recovery', () => this.recover()),
    ];
  }

  /** Stops the loops and waits for running actions to reach a checkpoint; they stay ours until a successor takes them over. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#unsubscribe();
    await Promise.all(this.#loops);
    this.#loops = [];
    await Promise.allSettled([...this.#running.values()]);
  }

  /** Takes over (and resumes) every running action whose owner died. */
  async recover(): Promise<ActionWork[]> {
    if (this.#stopping.signal.aborted) return [];
    const claimed = await this.#systems.claimOrphans(this.owner, this.#options.ownerTtlMs, this.#ownerDead);
    for (const work of claimed) {
      this.#log('resuming an action whose owner died', {
        action: work.id,
        kind: work.kind,
        system: work.system,
      });
      this.run(work);
    }
    return claimed;
  }

  /** Waits until every action this runner runs has ended (tests). */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running.values()]);
  }

  /** Runs an action this server owns in the background, once. */
  run(work: ActionWork): void {
    if (this.#running.has(work.id)) return;
    const control = this.#control(work);
    const run = (async () => {
      try {
        await this.#gate(work);
        // accepted → in_progress; a server that lost the action to a takeover leaves it alone.
        if (!(await this.#systems.startAction(work.id, this.owner))) return;
        await this.#execute(work, control);
        await this.#systems.finishAction(work.id, this.owner, 'succeeded', '');
        this.#log('action succeeded', { action: work.id, kind: work.kind, system: work.system });
      } catch (err) {
        // A stopping server leaves the action running: its successor resumes it.
        if (err instanceof ActionStopped) return;
        const reason = describeError(err);
        this.#log('action failed', { action: work.id, kind: work.kind, system: work.system, reason });
        // Failing to record the failure leaves the action running under our heartbeat; a successor
        // server resumes it after a restart, so it is logged rather than thrown into the void.
        await this.#systems
          .finishAction(work.id, this.owner, 'failed', reason)
          .catch((finishErr) =>
            this.#log('recording the failure failed', { action: work.id, err: describeError(finishErr) }),
          );
      }
    })().finally(() => this.#running.delete(work.id));
    this.#running.set(work.id, run);
  }

  #control(work: ActionWork): ActionControl {
    const signal = this.#stopping.signal;
    const checkpoint = () => {
      if (signal.aborted) throw new ActionStopped();
    };
    const wakeup = new Wakeup();
    return {
      checkpoint,
      poll: async () => {
        this.#waiting.add(wakeup);
        try {
          if ((await wakeup.wait(this.#options.pollMs, signal)) === 'woken')
            await sleep(minPollGapMs, signal);
        } finally {
          this.#waiting.delete(wakeup);
        }
        checkpoint();
      },
      note: (line) => this.#systems.appendLog(work.id, this.owner, line),
    };
  }

  #loopLogger(): ServiceLogger {
    const log = (fields: Readonly<Record<string, unknown>>, message: string) =>
      this.#log(message, { ...fields });
    return { info: log, warn: log };
  }
}
