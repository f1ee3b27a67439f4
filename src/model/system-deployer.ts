import { createHash, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { ActualLRP, BbsStore, DesiredLRPDefinition } from '../bbs/index.js';
import { BerthError, InvalidArgumentError, NotFoundError } from '../core/index.js';
import { cellPlacementTag } from '../rep/rep-api.js';
import type { AgentAction } from './agent-rules.js';
import { type AgentActionResult, applyCellAgentActions, cellAgentView } from './cell-agent-service.js';
import {
  addCell,
  assignUnitToCell,
  destroyCell,
  ensureCellDead,
  moveUnitToCell,
  removeCell,
} from './cell-rules.js';
import {
  type DeployedService,
  nextRollingStep,
  planDeploy,
  type ServiceChange,
  specVersion,
} from './deploy-plan.js';
import { planLocks } from './lock-table.js';
import type { ModelData } from './memory-model-txn-runner.js';
import { settleModel } from './model-settler.js';
import { runTxn } from './model-txn-runner.js';
import type { ModelView } from './model-types.js';
import { relationEnv, type UnitAddress, type UnitRelationData, unitRelationData } from './relation-data.js';
import { addRelation, destroyRelation, enterScope, scopesToEnter } from './relation-rules.js';
import { addService, destroyService } from './service-rules.js';
import { addSidecarUnit, sidecarsToCreate } from './sidecar-rules.js';
import { type SqlBackend, SqlModelTxnRunner } from './sql-model-txn-runner.js';
import {
  type ActionRecord,
  type ActionWork,
  SqlSystemStore,
  type SystemRecord,
  type SystemServiceRecord,
} from './sql-system-store.js';
import {
  InvalidDefinitionError,
  type JobDefinition,
  parseSystemDefinition,
  type ServiceDefinition,
  type SystemDefinition,
  storedDefinitionProblems,
  validateSystemDefinition,
} from './system-definition.js';
import { type ServiceState, serviceState, systemStatus } from './system-status.js';
import { relationId } from './txn-parts.js';
import { addUnit, destroyUnit } from './unit-rules.js';

export interface SystemDeployerOptions {
  readonly store: BbsStore;
  readonly backend: SqlBackend;
  /** This server's identity in action rows; default host:pid:random. */
  readonly owner?: string;
  readonly now?: () => Date;
  readonly newId?: () => string;
  /** How often a running action polls instances (rolling updates, teardown). */
  readonly pollMs?: number;
  readonly heartbeatMs?: number;
  /** A running action whose owner has not heartbeaten for this long is taken over. */
  readonly ownerTtlMs?: number;
  /** How long a rolling update or teardown waits for instances before it fails. */
  readonly actionTimeoutMs?: number;
  /** Whether an owner is known dead without waiting for its TTL (default: same host, pid gone). */
  readonly ownerDead?: (owner: string) => boolean;
  readonly log?: (message: string, fields?: Record<string, unknown>) => void;
  /** Awaited before an accepted action executes: tests hold an action (and its locks) open with it. */
  readonly gate?: (action: ActionRecord) => Promise<void>;
}

/** The body of `POST /v1/deploys`. */
export interface DeployRequest {
  /** The YAML text, or the definition as a JSON value. */
  readonly definition: string | unknown;
  readonly path?: string;
}

export interface UnitStatus {
  readonly index: number;
  readonly name: string;
  readonly life: string;
  readonly state: string;
  readonly cell_id: string | null;
  /** A sidecar's principal unit (`/web/api#0`), null for principals. */
  readonly principal: string | null;
}

export interface ServiceStatus {
  readonly path: string;
  readonly kind: 'service' | 'job';
  readonly state: ServiceState | string;
  readonly life: string;
  readonly version: string;
  readonly process_guid: string;
  readonly sidecar_of: string | null;
  readonly units: readonly UnitStatus[];
}

export interface RelationStatus {
  readonly endpoints: readonly [string, string];
  readonly kind: 'global' | 'container';
  readonly life: string;
  /** The units in the relation's scope. */
  readonly scope: readonly string[];
}

/** One unit on a cell and what its container is told about its relations. */
export interface CellUnitRelations {
  readonly process_guid: string;
  readonly index: number;
  readonly system: string;
  readonly file: UnitRelationData;
  readonly env: Readonly<Record<string, string>>;
}

export interface SystemStatusJson {
  readonly name: string;
  readonly state: string;
  readonly reason?: string;
  readonly phase: string;
  readonly actions: readonly ActionRecord[];
  readonly services: readonly ServiceStatus[];
  readonly relations: readonly RelationStatus[];
}

/** The BBS domain of a system's DesiredLRPs and tasks: status and teardown list by it. */
export function systemDomain(system: string): string {
  return `system-${system}`;
}

/** `shop` + `/web/api` → the model's service name. */
export function modelServiceName(system: string, path: string): string {
  return `${system}:${path}`;
}

/**
 * A DesiredLRP per service version: `system.seg.seg.version`. Segments never contain a dot, so
 * `/a-b` and `/a/b` cannot collide.
 */
export function serviceProcessGuid(system: string, path: string, version: string): string {
  return `${system}.${path.slice(1).replaceAll('/', '.')}.${version}`;
}

/**
 * The model unit an instance belongs to, from its guid alone (so it answers before the service
 * row is written): `shop.web.api.<version>` index i → `shop:/web/api#i`; a sidecar unit's own
 * LRP `shop.log.<version>.u3` → `shop:/log#3`. Versions are hex, so never `u<digits>`.
 */
export function unitOfInstance(system: string, processGuid: string, index: number): string | undefined {
  if (!processGuid.startsWith(`${system}.`)) return undefined;
  const parts = processGuid.slice(system.length + 1).split('.');
  let unitIndex = index;
  const last = parts.at(-1) ?? '';
  if (/^u\d+$/.test(last)) {
    unitIndex = Number(last.slice(1));
    parts.pop();
  }
  parts.pop();
  return parts.length === 0 ? undefined : modelServiceName(system, `/${parts.join('/')}`) + `#${unitIndex}`;
}

/** A sidecar unit's own DesiredLRP: one instance pinned to its principal's cell. */
export function sidecarUnitGuid(base: string, index: number): string {
  return `${base}.u${index}`;
}

export function jobVersion(job: JobDefinition): string {
  return createHash('sha256').update(JSON.stringify(job)).digest('hex').slice(0, 12);
}

function defaultOwnerDead(owner: string): boolean {
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

class Stopped extends Error {}

/**
 * Seed 004's deploys and teardowns, executed by the server against the BBS: accepted under
 * intention locks stored as rows, run by a worker in the accepting server, heartbeaten, taken over
 * when their owner dies, and ended (with their locks released) in one transaction.
 */
export class SystemDeployer {
  readonly systems: SqlSystemStore;
  readonly runner: SqlModelTxnRunner;
  readonly owner: string;
  readonly #store: BbsStore;
  readonly #now: () => Date;
  readonly #newId: () => string;
  readonly #pollMs: number;
  readonly #heartbeatMs: number;
  readonly #ownerTtlMs: number;
  readonly #timeoutMs: number;
  readonly #ownerDead: (owner: string) => boolean;
  readonly #log: (message: string, fields?: Record<string, unknown>) => void;
  readonly #gate: (action: ActionRecord) => Promise<void>;
  readonly #running = new Map<string, Promise<void>>();
  #timers: NodeJS.Timeout[] = [];
  #stopped = false;

  private constructor(options: SystemDeployerOptions, runner: SqlModelTxnRunner) {
    this.#store = options.store;
    this.runner = runner;
    this.#now = options.now ?? (() => new Date());
    this.systems = new SqlSystemStore(options.backend, this.#now);
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.#newId = options.newId ?? (() => `d-${randomUUID().slice(0, 12)}`);
    this.#pollMs = options.pollMs ?? 500;
    this.#heartbeatMs = options.heartbeatMs ?? 5_000;
    this.#ownerTtlMs = options.ownerTtlMs ?? 20_000;
    this.#timeoutMs = options.actionTimeoutMs ?? 600_000;
    this.#ownerDead = options.ownerDead ?? defaultOwnerDead;
    this.#log = options.log ?? (() => {});
    this.#gate = options.gate ?? (async () => {});
  }

  static async open(options: SystemDeployerOptions): Promise<SystemDeployer> {
    const runner = await SqlModelTxnRunner.open(options.backend, (options.now ?? (() => new Date()))());
    return new SystemDeployer(options, runner);
  }

  /** Recovers actions whose owner died, then keeps heartbeating and watching for more. */
  async start(): Promise<void> {
    // Never block (or fail) start-up on an old action: a resumed one that cannot run fails on its own.
    await this.recover().catch((err) => this.#log('recovery failed', { err: String(err) }));
    this.#timers.push(
      setInterval(() => {
        this.systems
          .heartbeat(this.owner)
          .catch((err) => this.#log('heartbeat failed', { err: String(err) }));
      }, this.#heartbeatMs),
      setInterval(() => {
        this.recover().catch((err) => this.#log('recovery failed', { err: String(err) }));
      }, this.#heartbeatMs),
    );
    for (const t of this.#timers) t.unref();
  }

  /** Stops the timers and waits for running actions to reach a checkpoint; they stay ours until a successor takes them over. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await Promise.allSettled([...this.#running.values()]);
  }

  /** Takes over (and resumes) every running action whose owner died. */
  async recover(): Promise<ActionWork[]> {
    if (this.#stopped) return [];
    const claimed = await this.systems.claimOrphans(this.owner, this.#ownerTtlMs, this.#ownerDead);
    for (const work of claimed) {
      this.#log('resuming an action whose owner died', {
        action: work.id,
        kind: work.kind,
        system: work.system,
      });
      this.#execute(work);
    }
    return claimed;
  }

  /** Waits until every action this deployer runs has ended (tests). */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running.values()]);
  }

  /**
   * Validates first (every problem listed, nothing written), then accepts the deploy with its lock
   * rows in one transaction (or throws `LockHeldError`), then executes it in the background.
   */
  async deploy(req: DeployRequest): Promise<ActionRecord> {
    const definition = parseDefinition(req.definition);
    const path = req.path ?? '/';
    planLocks({ kind: 'deploy', path });
    const accepted = await this.systems.acceptAction({
      id: this.#newId(),
      system: definition.system,
      action: { kind: 'deploy', path },
      definition,
      owner: this.owner,
    });
    this.#execute({ ...accepted, definition });
    return accepted;
  }

  async teardown(system: string): Promise<ActionRecord> {
    const accepted = await this.systems.acceptAction({
      id: this.#newId(),
      system,
      action: { kind: 'teardown' },
      owner: this.owner,
    });
    this.#execute({ ...accepted, definition: null });
    return accepted;
  }

  #execute(work: ActionWork): void {
    if (this.#running.has(work.id)) return;
    const run = (async () => {
      try {
        await this.#gate(work);
        if (work.kind === 'deploy') this.#checkStoredDefinition(work);
        if (work.kind === 'deploy') await this.#runDeploy(work);
        else await this.#runTeardown(work);
        await this.systems.finishAction(work.id, this.owner, 'succeeded', '');
        this.#log('action succeeded', { action: work.id, kind: work.kind, system: work.system });
      } catch (err) {
        // A stopping server leaves the action running: its successor resumes it.
        if (err instanceof Stopped) return;
        const reason = err instanceof Error ? err.message : String(err);
        this.#log('action failed', { action: work.id, kind: work.kind, system: work.system, reason });
        await this.systems.finishAction(work.id, this.owner, 'failed', reason).catch(() => false);
      }
    })().finally(() => this.#running.delete(work.id));
    this.#running.set(work.id, run);
  }

  /**
   * A deploy runs only a definition today's rules accept: one accepted by an older berth (or
   * written past the API) that breaks a bound would write without end, so it fails with the
   * problems as its reason instead.
   */
  #checkStoredDefinition(work: ActionWork): void {
    if (!work.definition) {
      throw new BerthError('invalid_argument', `deploy ${work.id} has no readable definition`);
    }
    const problems = storedDefinitionProblems(work.definition);
    if (problems.length > 0) throw new InvalidDefinitionError(problems);
  }

  #checkpoint(): void {
    if (this.#stopped) throw new Stopped('stopping');
  }

  async #note(work: ActionWork, line: string): Promise<void> {
    await this.systems.appendLog(work.id, this.owner, line);
  }

  async #sleep(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, this.#pollMs));
    this.#checkpoint();
  }

  // ---------------------------------------------------------------- deploy

  /**
   * Executes a deploy; safe to run again from the start after a crash: every step looks at what
   * exists (system service rows, DesiredLRPs, model entities) and does only what is missing.
   */
  async #runDeploy(work: ActionWork): Promise<void> {
    const definition = work.definition;
    if (!definition) throw new BerthError('internal', `deploy ${work.id} has no definition`);
    const system = work.system;
    await this.#store.upsertDomain({ domain: systemDomain(system), ttl_ms: 0 });
    const rows = await this.systems.listServices(system);
    const current: DeployedService[] = rows
      .filter((r) => r.kind === 'service')
      .map((r) => ({ path: r.path, version: r.version, spec: r.spec as ServiceDefinition }));
    const plan = planDeploy(current, definition, work.path);
    // A rolling update interrupted by a crash: its row already names the new version.
    const byPath = new Map(rows.map((r) => [r.path, r]));
    const changes = plan.services.map((c): ServiceChange => {
      const row = byPath.get(c.path);
      if (c.kind === 'unchanged' && row?.old_process_guid) {
        return {
          kind: 'rolling-update',
          path: c.path,
          from_version: '',
          version: c.version,
          spec: row.spec as ServiceDefinition,
          changed: [],
        };
      }
      return c;
    });
    const isSidecar = (c: ServiceChange) =>
      'spec' in c
        ? c.spec.subordinate_to !== undefined
        : (byPath.get(c.path)?.spec as ServiceDefinition | undefined)?.subordinate_to !== undefined;
    // Sidecars go before their principals when destroyed, after them when created.
    const destroys = changes.filter((c) => c.kind === 'destroy' || c.kind === 'replace');
    destroys.sort((a, b) => Number(isSidecar(b)) - Number(isSidecar(a)));
    for (const c of destroys) {
      this.#checkpoint();
      const row = byPath.get(c.path);
      if (row) await this.#destroyService(work, row);
    }
    const upserts = changes.filter((c) => c.kind !== 'destroy');
    upserts.sort((a, b) => Number(isSidecar(a)) - Number(isSidecar(b)));
    for (const c of upserts) {
      this.#checkpoint();
      await this.#applyChange(work, c, byPath.get(c.path));
    }
    for (const [a, b] of plan.remove_relations) {
      const id = relationId(modelServiceName(system, a), modelServiceName(system, b));
      await runTxn(this.runner, (v) =>
        v.relation(id)?.life === 'alive' ? destroyRelation(v, id, this.#now()) : null,
      );
    }
    for (const [a, b] of plan.add_relations) {
      const [ma, mb] = [modelServiceName(system, a), modelServiceName(system, b)];
      await runTxn(this.runner, (v) =>
        v.relation(relationId(ma, mb)) || v.service(ma)?.life !== 'alive' || v.service(mb)?.life !== 'alive'
          ? null
          : addRelation(v, ma, mb, 'global'),
      );
    }
    for (const job of definition.jobs) {
      if (work.path !== '/' && !(job.path === work.path || job.path.startsWith(`${work.path}/`))) continue;
      await this.#ensureJob(work, job);
    }
    await this.#settle();
    await this.reconcile(system);
    await this.#note(
      work,
      `deployed ${changes.filter((c) => c.kind !== 'unchanged').length} change(s) under ${work.path}`,
    );
  }

  async #applyChange(
    work: ActionWork,
    change: ServiceChange,
    row: SystemServiceRecord | undefined,
  ): Promise<void> {
    const system = work.system;
    const name = modelServiceName(system, change.path);
    switch (change.kind) {
      case 'unchanged':
        return;
      case 'create':
      case 'replace': {
        const spec = change.spec;
        const guid = serviceProcessGuid(system, spec.path, change.version);
        await this.#ensureModelService(name, spec, system);
        if (spec.subordinate_to === undefined) await this.#ensureUnits(name, spec.instances);
        if (spec.subordinate_to === undefined)
          await this.#ensureDesired(guid, spec, spec.instances, system, []);
        await this.systems.putService({
          system,
          path: spec.path,
          kind: 'service',
          model_name: name,
          version: change.version,
          spec,
          process_guid: guid,
          old_process_guid: null,
        });
        await this.#note(work, `${change.kind === 'create' ? 'created' : 'replaced'} ${spec.path} (${guid})`);
        return;
      }
      case 'update-in-place': {
        const spec = change.spec;
        if (!row) return;
        if (spec.subordinate_to === undefined) {
          // Units first: an instance the rep starts must find its unit (and its relation data).
          await this.#ensureUnits(name, spec.instances);
          await this.#store.updateDesiredLRP({
            process_guid: row.process_guid,
            update: { instances: spec.instances, routes: spec.routes, annotation: spec.annotation },
          });
        }
        await this.systems.putService({ ...row, spec });
        await this.#note(work, `updated ${spec.path} in place (${change.changed.join(', ')})`);
        return;
      }
      case 'rolling-update': {
        if (!row) return;
        await this.#rollingUpdate(work, row, change.spec, change.version);
        return;
      }
      case 'destroy':
        return;
    }
  }

  /**
   * Seed 004 / issue 8: a new DesiredLRP version whose instances must be RUNNING before old ones
   * stop, stepped by `nextRollingStep`. The old version shrinks from the top (the BBS retires the
   * highest indices when its instance count drops), so a non-RUNNING old instance at a low index
   * waits for its turn instead of being stopped first.
   */
  async #rollingUpdate(
    work: ActionWork,
    row: SystemServiceRecord,
    spec: ServiceDefinition,
    version: string,
  ): Promise<void> {
    const system = work.system;
    const newGuid = serviceProcessGuid(system, spec.path, version);
    const oldGuid = row.old_process_guid ?? row.process_guid;
    if (spec.subordinate_to !== undefined) {
      // Sidecar units each have their own pinned DesiredLRP: replace them; reconcile recreates them at the new version.
      for (const d of await this.#store.listDesiredLRPs({ domain: systemDomain(system) })) {
        if (d.process_guid.startsWith(`${oldGuid}.u`)) await this.#removeDesired(d.process_guid);
      }
      await this.systems.putService({ ...row, spec, version, process_guid: newGuid, old_process_guid: null });
      await this.#note(work, `rolled sidecar ${spec.path} to ${version}`);
      return;
    }
    await this.systems.putService({
      ...row,
      spec,
      version,
      process_guid: newGuid,
      old_process_guid: oldGuid,
    });
    await this.#ensureDesired(newGuid, spec, Math.min(1, spec.instances), system, []);
    await this.#note(work, `rolling ${spec.path} from ${oldGuid} to ${newGuid}`);
    const deadline = this.#now().getTime() + this.#timeoutMs;
    for (;;) {
      this.#checkpoint();
      const oldActuals = primaries(await this.#store.listActualLRPs({ process_guid: oldGuid }));
      const newActuals = primaries(await this.#store.listActualLRPs({ process_guid: newGuid }));
      const step = nextRollingStep(oldActuals, newActuals, spec.instances);
      const current = await this.#store.getDesiredLRP({ process_guid: newGuid });
      if (current.instances !== step.new_instances)
        await this.#store.updateDesiredLRP({
          process_guid: newGuid,
          update: { instances: step.new_instances },
        });
      const oldDesired = await this.#store.getDesiredLRP({ process_guid: oldGuid }).catch(() => undefined);
      // An old instance already retired (index past the count) stays listed until its cell stops it; count it once.
      const toStop = step.stop_old.filter((i) => i < (oldDesired?.instances ?? 0)).length;
      if (oldDesired && toStop > 0) {
        const keep = Math.max(0, oldDesired.instances - toStop);
        if (keep < oldDesired.instances)
          await this.#store.updateDesiredLRP({ process_guid: oldGuid, update: { instances: keep } });
      }
      if (
        step.done ||
        (oldDesired?.instances === 0 &&
          newActuals.filter((i) => i.state === 'RUNNING').length >= spec.instances)
      )
        break;
      if (this.#now().getTime() > deadline) {
        throw new BerthError(
          'unavailable',
          `rolling update of ${spec.path} timed out: ${newActuals.filter((i) => i.state === 'RUNNING').length}/${spec.instances} new instances RUNNING`,
        );
      }
      await this.#sleep();
    }
    await this.#removeDesired(oldGuid);
    await this.#ensureUnits(modelServiceName(system, spec.path), spec.instances);
    await this.systems.putService({ ...row, spec, version, process_guid: newGuid, old_process_guid: null });
    await this.#note(work, `rolled ${spec.path} to ${newGuid}`);
  }

  async #ensureModelService(name: string, spec: ServiceDefinition, system: string): Promise<void> {
    const subordinate = spec.subordinate_to !== undefined;
    await this.#waitRemoved(name);
    await runTxn(this.runner, (v) => (v.service(name) ? null : addService(v, name, { subordinate })));
    if (subordinate) {
      const principal = modelServiceName(system, spec.subordinate_to!);
      await runTxn(this.runner, (v) =>
        v.relation(relationId(principal, name)) ? null : addRelation(v, principal, name, 'container'),
      );
    }
  }

  /** A name cannot be reused until the old entity is removed: settle until a Dying one is gone. */
  async #waitRemoved(name: string): Promise<void> {
    const deadline = this.#now().getTime() + this.#timeoutMs;
    for (;;) {
      const view = await this.runner.read();
      if (view.service(name)?.life !== 'dying') return;
      await this.#settle();
      if (this.#now().getTime() > deadline)
        throw new BerthError('unavailable', `service ${name} is still being removed`);
      if ((await this.runner.read()).service(name)?.life === 'dying') await this.#sleep();
    }
  }

  /** Units 0..n-1 Alive; higher indices destroyed (unit = instance index). */
  async #ensureUnits(name: string, instances: number): Promise<void> {
    const view = await this.runner.read();
    const existing = [...view.unitsOfService(name)].map((u) => view.unit(u)!);
    for (const u of existing) {
      if (u.index >= instances && u.life === 'alive')
        await runTxn(this.runner, (v) =>
          v.unit(u.name)?.life === 'alive' ? destroyUnit(v, u.name, this.#now()) : null,
        );
    }
    if (existing.some((u) => u.index < instances && u.life !== 'alive')) await this.#settle();
    for (let i = 0; i < instances; i++) {
      await runTxn(this.runner, (v) => {
        const unit = v.unit(`${name}#${i}`);
        return unit || v.service(name)?.life !== 'alive' ? null : addUnit(v, name, i);
      });
    }
  }

  async #ensureDesired(
    guid: string,
    spec: ServiceDefinition,
    instances: number,
    system: string,
    placementTags: readonly string[],
  ): Promise<void> {
    const exists = await this.#store.getDesiredLRP({ process_guid: guid }).catch((err) => {
      if (err instanceof BerthError && err.code === 'not_found') return undefined;
      throw err;
    });
    if (exists) return;
    const def: DesiredLRPDefinition = {
      process_guid: guid,
      domain: systemDomain(system),
      instances,
      image: spec.image,
      ...(spec.command ? { command: spec.command } : {}),
      env: spec.env,
      memory_mb: spec.memory_mb,
      disk_mb: spec.disk_mb,
      ports: spec.ports,
      routes: spec.routes,
      annotation: spec.annotation,
      ...(spec.monitor ? { monitor: spec.monitor } : {}),
      start_timeout_s: 60,
      placement_tags: placementTags,
    };
    await this.#store.desireLRP(def).catch((err) => {
      // Another pass (a resumed action) created it first: same guid, same spec.
      if (err instanceof BerthError && err.code === 'already_exists') return;
      throw err;
    });
  }

  async #removeDesired(guid: string): Promise<void> {
    await this.#store.removeDesiredLRP({ process_guid: guid }).catch((err) => {
      if (err instanceof BerthError && err.code === 'not_found') return;
      throw err;
    });
  }

  async #ensureJob(work: ActionWork, job: JobDefinition): Promise<void> {
    const version = jobVersion(job);
    const guid = serviceProcessGuid(work.system, job.path, version);
    const exists = await this.#store.getTask({ task_guid: guid }).catch(() => undefined);
    if (!exists) {
      await this.#store
        .desireTask({
          task_guid: guid,
          domain: systemDomain(work.system),
          image: job.image,
          ...(job.command ? { command: job.command } : {}),
          env: job.env,
          memory_mb: job.memory_mb,
          disk_mb: job.disk_mb,
          result_file: '',
          completion_callback_url: '',
          placement_tags: [],
        })
        .catch((err) => {
          if (err instanceof BerthError && err.code === 'already_exists') return;
          throw err;
        });
      await this.#note(work, `started job ${job.path} (${guid})`);
    }
    await this.systems.putService({
      system: work.system,
      path: job.path,
      kind: 'job',
      model_name: '',
      version,
      spec: job,
      process_guid: guid,
      old_process_guid: null,
    });
  }

  async #destroyService(work: ActionWork, row: SystemServiceRecord): Promise<void> {
    if (row.kind === 'job') {
      await this.#removeTask(row.process_guid);
      await this.systems.deleteService(row.system, row.path);
      return;
    }
    await runTxn(this.runner, (v) =>
      v.service(row.model_name)?.life === 'alive' ? destroyService(v, row.model_name, this.#now()) : null,
    );
    for (const d of await this.#store.listDesiredLRPs({ domain: systemDomain(row.system) })) {
      const g = d.process_guid;
      if (g === row.process_guid || g === row.old_process_guid || g.startsWith(`${row.process_guid}.u`))
        await this.#removeDesired(g);
    }
    await this.systems.deleteService(row.system, row.path);
    await this.#note(work, `destroyed ${row.path}`);
  }

  async #removeTask(guid: string): Promise<void> {
    try {
      let task = await this.#store.getTask({ task_guid: guid });
      if (task.state === 'PENDING' || task.state === 'RUNNING')
        task = await this.#store.cancelTask({ task_guid: guid });
      if (task.state === 'COMPLETED')
        task = await this.#store.resolvingTask({ task_guid: guid, expected: task.modification_tag });
      if (task.state === 'RESOLVING')
        await this.#store.deleteTask({ task_guid: guid, expected: task.modification_tag });
    } catch (err) {
      if (err instanceof BerthError && err.code === 'not_found') return;
      throw err;
    }
  }

  async #settle(): Promise<void> {
    const report = await settleModel(this.runner, { now: this.#now(), agentCells: await this.#agentCells() });
    if (report.errors.length > 0) this.#log('model settle errors', { errors: report.errors.map(String) });
  }

  // ---------------------------------------------------------------- teardown

  async #runTeardown(work: ActionWork): Promise<void> {
    const system = work.system;
    const rows = await this.systems.listServices(system);
    const sidecarFirst = [...rows].sort(
      (a, b) =>
        Number((b.spec as ServiceDefinition).subordinate_to !== undefined) -
        Number((a.spec as ServiceDefinition).subordinate_to !== undefined),
    );
    for (const row of sidecarFirst) {
      this.#checkpoint();
      await this.#destroyService(work, row);
    }
    const deadline = this.#now().getTime() + this.#timeoutMs;
    for (;;) {
      // Anything left in the domain: a sidecar LRP whose row was already gone after a crash, or
      // one the system agent created for a unit it read as alive just before the teardown began.
      for (const d of await this.#store.listDesiredLRPs({ domain: systemDomain(system) }))
        await this.#removeDesired(d.process_guid);
      await this.#settle();
      const view = await this.runner.read();
      const left = [...view.services()].filter((s) => s.name.startsWith(`${system}:`)).length;
      const actuals = (await this.#store.listActualLRPs({ domain: systemDomain(system) })).length;
      if (left === 0 && actuals === 0) break;
      if (this.#now().getTime() > deadline)
        throw new BerthError(
          'unavailable',
          `teardown of ${system} timed out: ${left} service(s), ${actuals} instance(s) left`,
        );
      await this.#sleep();
    }
    await this.#note(work, `tore down ${system}`);
  }

  // ---------------------------------------------------------------- reconcile

  /**
   * The unit agents' periodic pass over every system no action is running on (a running deploy
   * or teardown reconciles its own system): units follow their instances as the auction places
   * them, principals placed after the deploy (scale-up, a replacement) get their sidecars, and
   * sidecar LRPs whose unit is no longer alive are removed.
   */
  async reconcileAll(): Promise<void> {
    for (const s of await this.systems.listSystems()) {
      if ((await this.systems.runningActions(s.name)).length > 0) continue;
      try {
        await this.reconcile(s.name);
        await this.#pruneSidecarLRPs(s.name);
      } catch (err) {
        this.#log('system agent pass failed', { system: s.name, err: String(err) });
      }
    }
    await this.#retireGoneCells().catch((err) => this.#log('retiring cells failed', { err: String(err) }));
  }

  /**
   * The machine and provisioning agents for cells that left the cluster (no live presence): once
   * their units have moved away, Dying → Dead → removed, so the model does not keep every cell
   * that ever existed and a returning cell id can be added again.
   */
  async #retireGoneCells(): Promise<void> {
    const live = new Set((await this.#store.listCells()).map((c) => c.cell_id));
    const view = await this.runner.read();
    for (const cell of [...view.cells()]) {
      if (live.has(cell.id) || view.count('units-on-cell', cell.id) > 0) continue;
      await runTxn(this.runner, (v) => (v.cell(cell.id)?.life === 'alive' ? destroyCell(v, cell.id) : null));
      await runTxn(this.runner, (v) =>
        v.cell(cell.id)?.life === 'dying' ? ensureCellDead(v, cell.id) : null,
      );
      await runTxn(this.runner, (v) => (v.cell(cell.id)?.life === 'dead' ? removeCell(v, cell.id) : null));
    }
  }

  /** Removes each sidecar unit's DesiredLRP once that unit is no longer alive (or gone). */
  async #pruneSidecarLRPs(system: string): Promise<void> {
    const rows = (await this.systems.listServices(system)).filter(
      (r) => r.kind === 'service' && (r.spec as ServiceDefinition).subordinate_to !== undefined,
    );
    if (rows.length === 0) return;
    const view = await this.runner.read();
    for (const d of await this.#store.listDesiredLRPs({ domain: systemDomain(system) })) {
      const row = rows.find((r) => d.process_guid.startsWith(`${r.process_guid}.u`));
      if (!row) continue;
      const index = Number(d.process_guid.slice(row.process_guid.length + 2));
      const unit = view.unit(`${row.model_name}#${index}`);
      if (unit === undefined || unit.life !== 'alive') await this.#removeDesired(d.process_guid);
    }
  }

  /**
   * What the unit agents would do for a system's units, from the BBS: an instance placed on a cell
   * assigns its unit there, an assigned principal gets its sidecar unit (and the sidecar's own
   * DesiredLRP pinned to that cell), and assigned units enter the scopes of their relations.
   */
  async reconcile(system: string): Promise<void> {
    const rows = (await this.systems.listServices(system)).filter((r) => r.kind === 'service');
    const byName = new Map(rows.map((r) => [r.model_name, r]));
    const actuals = primaries(await this.#store.listActualLRPs({ domain: systemDomain(system) }));
    const cellOf = new Map<string, string>();
    const runningOn = new Map<string, string>();
    for (const a of actuals) {
      if (!a.cell_id) continue;
      cellOf.set(`${a.process_guid}#${a.index}`, a.cell_id);
      if (a.state === 'RUNNING') runningOn.set(`${a.process_guid}#${a.index}`, a.cell_id);
    }
    let view = await this.runner.read();
    for (const row of rows) {
      if ((row.spec as ServiceDefinition).subordinate_to !== undefined) continue;
      for (const unitName of [...view.unitsOfService(row.model_name)]) {
        const unit = view.unit(unitName)!;
        if (unit.life !== 'alive') continue;
        const key = `${row.process_guid}#${unit.index}`;
        // Assigned at first placement; moved (with its sidecars) once its instance runs elsewhere.
        const cell = unit.cell_id === null ? cellOf.get(key) : runningOn.get(key);
        if (!cell || cell === unit.cell_id) continue;
        await runTxn(this.runner, (v) => (v.cell(cell) ? null : addCell(v, cell)));
        await runTxn(this.runner, (v) => {
          const now = v.unit(unitName);
          if (v.cell(cell)?.life !== 'alive' || now?.life !== 'alive') return null;
          return now.cell_id === null
            ? assignUnitToCell(v, unitName, cell)
            : moveUnitToCell(v, unitName, cell);
        }).catch((err) => this.#log('assign failed', { unit: unitName, err: String(err) }));
      }
    }
    // Creating sidecar units and entering scopes is the unit agents' side: cells that run their
    // own agents do it for their units; the server stands in for the others.
    const agents = await this.#agentCells();
    const ownAgent = (unit: string) => agents.has(view.unit(unit)?.cell_id ?? '');
    view = await this.runner.read();
    for (const s of sidecarsToCreate(view)) {
      if (!byName.has(s.service) || ownAgent(s.principal)) continue;
      await runTxn(this.runner, (v) =>
        inSystemView(v, s.principal, s.service) ? addSidecarUnit(v, s.principal, s.service) : null,
      ).catch((err) => this.#log('sidecar failed', { principal: s.principal, err: String(err) }));
    }
    view = await this.runner.read();
    for (const row of rows) {
      const spec = row.spec as ServiceDefinition;
      if (spec.subordinate_to === undefined) continue;
      for (const unitName of view.unitsOfService(row.model_name, 'alive')) {
        const unit = view.unit(unitName)!;
        if (unit.cell_id === null) continue;
        const guid = sidecarUnitGuid(row.process_guid, unit.index);
        const tags = [cellPlacementTag(unit.cell_id)];
        // Its principal moved: the LRP pinned to the old cell goes, a new one is pinned beside it.
        const pinned = await this.#store.getDesiredLRP({ process_guid: guid }).catch(() => undefined);
        if (pinned && pinned.placement_tags.join() !== tags.join()) await this.#removeDesired(guid);
        await this.#ensureDesired(guid, { ...spec, instances: 1 }, 1, system, tags);
      }
    }
    for (const row of rows) {
      for (const unitName of [...view.unitsOfService(row.model_name, 'alive')]) {
        if (view.unit(unitName)?.cell_id === null || ownAgent(unitName)) continue;
        for (const rel of scopesToEnter(view, unitName)) {
          await runTxn(this.runner, (v) => enterScope(v, rel, unitName)).catch(() => null);
        }
      }
    }
  }

  // ---------------------------------------------------------------- status

  async listSystems(): Promise<{ name: string; state: string; reason?: string }[]> {
    const out: { name: string; state: string; reason?: string }[] = [];
    for (const s of await this.systems.listSystems()) {
      const status = await this.status(s.name).catch(() => undefined);
      if (status)
        out.push({ name: s.name, state: status.state, ...(status.reason ? { reason: status.reason } : {}) });
    }
    return out;
  }

  async status(name: string): Promise<SystemStatusJson> {
    const system = await this.systems.getSystem(name);
    if (!system) throw new NotFoundError('system', name);
    const rows = await this.systems.listServices(name);
    const actuals = primaries(await this.#store.listActualLRPs({ domain: systemDomain(name) }));
    const view = await this.runner.read();
    const pathOf = (model: string) => model.slice(name.length + 1);
    const unitLabel = (unit: string) => {
      const [service, index] = unit.split('#');
      return `${pathOf(service!)}#${index}`;
    };
    const services: ServiceStatus[] = [];
    const states: ServiceState[] = [];
    for (const row of rows) {
      if (row.kind === 'job') {
        const task = await this.#store.getTask({ task_guid: row.process_guid }).catch(() => undefined);
        services.push({
          path: row.path,
          kind: 'job',
          state: task
            ? task.state === 'COMPLETED'
              ? task.failed
                ? 'failed'
                : 'completed'
              : task.state.toLowerCase()
            : 'gone',
          life: 'alive',
          version: row.version,
          process_guid: row.process_guid,
          sidecar_of: null,
          units: [],
        });
        continue;
      }
      const spec = row.spec as ServiceDefinition;
      const sidecar = spec.subordinate_to !== undefined;
      const mine = actuals.filter((a) =>
        sidecar
          ? a.process_guid.startsWith(`${row.process_guid}.u`) ||
            (row.old_process_guid !== null && a.process_guid.startsWith(`${row.old_process_guid}.u`))
          : a.process_guid === row.process_guid || a.process_guid === row.old_process_guid,
      );
      const indexOf = (a: ActualLRP) => (sidecar ? Number(a.process_guid.split('.u').at(-1)) : a.index);
      const versionOf = (a: ActualLRP) =>
        a.process_guid === row.process_guid || a.process_guid.startsWith(`${row.process_guid}.u`)
          ? row.version
          : 'old';
      const svc = view.service(row.model_name);
      const principalRow = sidecar ? rows.find((r) => r.path === spec.subordinate_to) : undefined;
      const desired = sidecar
        ? ((principalRow?.spec as ServiceDefinition | undefined)?.instances ?? 0)
        : spec.instances;
      const state = serviceState({
        life: svc?.life ?? 'alive',
        desired_instances: desired,
        current_version: row.version,
        instances: mine.map((a) => ({
          index: indexOf(a),
          version: versionOf(a),
          state: a.state,
          crash_count: a.crash_count,
        })),
      });
      states.push(state);
      const units: UnitStatus[] = [...view.unitsOfService(row.model_name)]
        .map((u) => view.unit(u)!)
        .sort((a, b) => a.index - b.index)
        .map((u) => {
          const actual =
            mine.find((a) => indexOf(a) === u.index && versionOf(a) === row.version) ??
            mine.find((a) => indexOf(a) === u.index);
          return {
            index: u.index,
            name: unitLabel(u.name),
            life: u.life,
            state: actual?.state ?? 'UNPLACED',
            cell_id: u.cell_id ?? (actual?.cell_id || null),
            principal: u.principal ? unitLabel(u.principal) : null,
          };
        });
      services.push({
        path: row.path,
        kind: 'service',
        state,
        life: svc?.life ?? 'removed',
        version: row.version,
        process_guid: row.process_guid,
        sidecar_of: spec.subordinate_to ?? null,
        units,
      });
    }
    const relations: RelationStatus[] = [];
    for (const r of view.relations()) {
      if (!r.endpoints.every((e) => e.startsWith(`${name}:`))) continue;
      relations.push({
        endpoints: [pathOf(r.endpoints[0]), pathOf(r.endpoints[1])],
        kind: r.scope,
        life: r.life,
        scope: [...view.unitsInScope(r.id)].map(unitLabel).sort(),
      });
    }
    const status = systemStatus({
      phase: system.phase,
      ...(system.reason ? { failure_reason: system.reason } : {}),
      services: states,
    });
    return {
      name,
      state: status.state,
      ...(status.reason ? { reason: status.reason } : system.reason ? { reason: system.reason } : {}),
      phase: system.phase,
      actions: await this.systems.runningActions(name),
      services,
      relations,
    };
  }

  // ---------------------------------------------------------------- cell agents

  /**
   * Live cells that run the unit and machine agents for their own units (their presence says
   * `model_agent`): the server's settle and reconcile leave those units to them, and takes over
   * again once a cell's presence is gone (killed, drained, partitioned for longer than its TTL).
   */
  async #agentCells(): Promise<ReadonlySet<string>> {
    return new Set(
      (await this.#store.listCells()).filter((c) => c.model_agent === true).map((c) => c.cell_id),
    );
  }

  /** What a cell's agents see (`GET /v1/agents/cells/{id}/model`). */
  async cellAgentModel(cellId: string): Promise<ModelData> {
    return cellAgentView(await this.runner.read(), cellId);
  }

  /** A cell's agents' actions, each rebuilt and applied in its own transaction. */
  async applyCellAgentActions(cellId: string, actions: readonly AgentAction[]): Promise<AgentActionResult[]> {
    return applyCellAgentActions(this.runner, cellId, actions, this.#now());
  }

  /**
   * The relation data of every system unit whose instance runs on a cell: what the cell's rep
   * writes into each container's relations file. Names are system paths (`/db#0`, `/db`).
   */
  async relationsForCell(cellId: string): Promise<CellUnitRelations[]> {
    const out: CellUnitRelations[] = [];
    const view = await this.runner.read();
    for (const system of await this.systems.listSystems()) {
      const actuals = primaries(await this.#store.listActualLRPs({ domain: systemDomain(system.name) }));
      if (!actuals.some((a) => a.cell_id === cellId)) continue;
      const relations = this.#relationsOf(system.name, actuals, view);
      for (const a of actuals)
        if (a.cell_id === cellId) {
          const data = relations(a.process_guid, a.index);
          if (data) out.push(data);
        }
    }
    return out;
  }

  /** One instance's relation data, for a container about to start (its env snapshot). */
  async relationsForInstance(processGuid: string, index: number): Promise<CellUnitRelations> {
    const desired = await this.#store.getDesiredLRP({ process_guid: processGuid });
    const prefix = systemDomain('');
    const data = desired.domain.startsWith(prefix)
      ? this.#relationsOf(
          desired.domain.slice(prefix.length),
          primaries(await this.#store.listActualLRPs({ domain: desired.domain })),
          await this.runner.read(),
        )(processGuid, index)
      : undefined;
    if (!data) throw new NotFoundError('system unit', `${processGuid}#${index}`);
    return data;
  }

  #relationsOf(
    system: string,
    actuals: readonly ActualLRP[],
    view: ModelView,
  ): (processGuid: string, index: number) => CellUnitRelations | undefined {
    const unitOf = (processGuid: string, index: number) => unitOfInstance(system, processGuid, index);
    const placed = new Map<string, UnitAddress>();
    for (const a of actuals) {
      const unit = unitOf(a.process_guid, a.index);
      if (unit === undefined || !a.address || a.state !== 'RUNNING') continue;
      // During a rolling update both versions run; either one is a fine address for a peer.
      placed.set(unit, {
        address: a.address,
        ports: Object.fromEntries(a.ports.map((p) => [String(p.container_port), p.host_port])),
      });
    }
    const label = (model: string) =>
      model.startsWith(`${system}:`) ? model.slice(system.length + 1) : model;
    return (processGuid, index) => {
      const unit = unitOf(processGuid, index);
      if (unit === undefined) return undefined;
      const data = unitRelationData(view, unit, (u) => placed.get(u));
      const file: UnitRelationData = {
        unit: label(data.unit),
        relations: data.relations.map((r) => ({
          ...r,
          relation: r.relation.split(' ').map(label).join(' '),
          service: label(r.service),
          peers: r.peers.map((p) => ({ ...p, unit: label(p.unit) })),
        })),
      };
      return { process_guid: processGuid, index, system, file, env: relationEnv(file) };
    };
  }

  async getAction(id: string): Promise<ActionRecord> {
    return this.systems.getAction(id);
  }

  async getSystemRecord(name: string): Promise<SystemRecord | undefined> {
    return this.systems.getSystem(name);
  }
}

function inSystemView(v: ModelView, principal: string, service: string): boolean {
  return v.unit(principal)?.life === 'alive' && v.service(service)?.life === 'alive';
}

function primaries(actuals: readonly ActualLRP[]): ActualLRP[] {
  return actuals.filter((a) => !a.evacuating);
}

/** YAML text or a JSON value → a normalized definition, or `InvalidDefinitionError` listing every problem. */
export function parseDefinition(definition: unknown): SystemDefinition {
  if (typeof definition === 'string') return parseSystemDefinition(definition);
  if (definition === undefined || definition === null)
    throw new InvalidArgumentError('definition is required: the YAML text or the definition as JSON', {
      field: 'definition',
    });
  const result = validateSystemDefinition(definition);
  if (!result.ok) throw new InvalidDefinitionError(result.problems);
  return result.definition;
}

export { specVersion };
