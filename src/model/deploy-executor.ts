import { BerthError, orAbsent } from '../core/index.js';
import type { ActionControl } from './action-runner.js';
import { type DeployedService, planDeploy, type ServiceChange } from './deploy-plan.js';
import {
  jobTaskGuid,
  jobVersion,
  modelServiceName,
  serviceProcessGuid,
  sidecarUnitIndex,
  systemDomain,
} from './instance-names.js';
import { runTxn } from './model-txn-runner.js';
import { addRelation, destroyRelation } from './relation-rules.js';
import { rollingUpdate } from './rolling-update.js';
import { jobOutcomeText, observeRollout, observeTeardown } from './rollout-observe.js';
import { planRollout, planTeardown, rememberProblems } from './rollout-plan.js';
import { ensureModelService, ensureUnits } from './service-model-writes.js';
import { destroyService } from './service-rules.js';
import type { ActionWork } from './sql-system-store.js';
import {
  InvalidDefinitionError,
  type JobDefinition,
  type SystemDefinition,
  storedDefinitionProblems,
} from './system-definition.js';
import { isSidecarRecord, type ServiceRecord, type SystemServiceRecord } from './system-service-record.js';
import {
  ensureDesiredLRP,
  ignoreAlreadyExists,
  removeDesiredLRP,
  removeTask,
  type SystemsContext,
  settle,
} from './systems-context.js';
import { containsPath } from './tree-path.js';
import { relationId } from './txn-parts.js';

/**
 * Executes seed 004's deploys and teardowns against the BBS and the model. Both are safe to run
 * again from the start after a crash: every step looks at what exists (system service rows,
 * DesiredLRPs, model entities) and does only what is missing.
 */
export class DeployExecutor {
  readonly #ctx: SystemsContext;
  /** The system agent's pass, run once a deploy has written everything. */
  readonly #reconcile: (system: string) => Promise<void>;

  constructor(ctx: SystemsContext, reconcile: (system: string) => Promise<void>) {
    this.#ctx = ctx;
    this.#reconcile = reconcile;
  }

  async execute(work: ActionWork, control: ActionControl): Promise<void> {
    if (work.kind === 'teardown') return this.#teardown(work, control);
    await this.#deploy(work, checkedDefinition(work), control);
  }

  async #deploy(work: ActionWork, definition: SystemDefinition, control: ActionControl): Promise<void> {
    const { store, systems, runner } = this.#ctx;
    const system = work.system;
    // The timeout counts from the action's acceptance, not from a restart that resumed it.
    const deadlineMs = Date.parse(work.created_at) + work.timeout_ms;
    await store.upsertDomain({ domain: systemDomain(system), ttl_ms: 0, owner: system });
    const rows = await systems.listServices(system);
    const current: DeployedService[] = rows.flatMap((r) =>
      r.kind === 'service' ? [{ path: r.path, version: r.version, spec: r.spec }] : [],
    );
    const plan = planDeploy(current, definition, work.path);
    // A rolling update interrupted by a crash: its row already names the new version.
    const byPath = new Map(rows.map((r) => [r.path, r]));
    const changes = plan.services.map((c): ServiceChange => {
      const row = byPath.get(c.path);
      if (c.kind === 'unchanged' && row?.kind === 'service' && row.old_process_guid) {
        return {
          kind: 'rolling-update',
          path: c.path,
          from_version: '',
          version: c.version,
          spec: row.spec,
          changed: [],
        };
      }
      return c;
    });
    const isSidecar = (c: ServiceChange) => {
      if ('spec' in c) return c.spec.subordinate_to !== undefined;
      const row = byPath.get(c.path);
      return row !== undefined && isSidecarRecord(row);
    };
    // Sidecars go before their principals when destroyed, after them when created.
    const destroys = changes.filter((c) => c.kind === 'destroy' || c.kind === 'replace');
    destroys.sort((a, b) => Number(isSidecar(b)) - Number(isSidecar(a)));
    for (const c of destroys) {
      control.checkpoint();
      const row = byPath.get(c.path);
      if (row) await this.#destroyService(row, control);
    }
    const upserts = changes.filter((c) => c.kind !== 'destroy');
    upserts.sort((a, b) => Number(isSidecar(a)) - Number(isSidecar(b)));
    for (const c of upserts) {
      control.checkpoint();
      const row = byPath.get(c.path);
      await this.#applyChange(system, c, row?.kind === 'service' ? row : undefined, control, deadlineMs);
    }
    for (const [a, b] of plan.remove_relations) {
      const id = relationId(modelServiceName(system, a), modelServiceName(system, b));
      await runTxn(runner, (v) =>
        v.relation(id)?.life === 'alive' ? destroyRelation(v, id, this.#ctx.now()) : null,
      );
    }
    for (const [a, b] of plan.add_relations) {
      const [ma, mb] = [modelServiceName(system, a), modelServiceName(system, b)];
      await runTxn(runner, (v) =>
        v.relation(relationId(ma, mb)) || v.service(ma)?.life !== 'alive' || v.service(mb)?.life !== 'alive'
          ? null
          : addRelation(v, ma, mb, 'global'),
      );
    }
    const outcomes = await systems.jobOutcomes(system);
    for (const job of definition.jobs) {
      if (!containsPath(work.path, job.path)) continue;
      const done =
        byPath.get(job.path)?.version === jobVersion(job) && outcomes.get(job.path) === 'completed';
      await this.#ensureJob(system, job, done, control);
    }
    await settle(this.#ctx);
    await this.#reconcile(system);
    await control.note(
      `deployed ${changes.filter((c) => c.kind !== 'unchanged').length} change(s) under ${work.path}`,
    );
    await this.#awaitRollout(work, control);
  }

  /**
   * Issue 19: the deploy (and its locks) lasts until `planRollout` says every service under its
   * path runs its new version at its count and every job completed, or fails with its reason. Each
   * round also runs the system agent's pass, which places units and creates sidecar instances.
   */
  async #awaitRollout(work: ActionWork, control: ActionControl): Promise<void> {
    let remembered: Record<string, string> = {};
    for (;;) {
      control.checkpoint();
      const { observation: seen, unrecorded } = await observeRollout(this.#ctx, work);
      for (const { job, version } of unrecorded)
        await this.#ctx.systems.recordJobOutcome(work.system, job.path, version, jobOutcomeText(job));
      const observation = { ...seen, remembered };
      remembered = rememberProblems(observation);
      const verdict = planRollout(observation);
      if (verdict.kind === 'failed') throw new BerthError('unavailable', verdict.reason);
      if (verdict.kind === 'rolled-out') {
        const p = verdict.progress;
        await control.note(
          `rolled out: ${p.services_ready} service(s), ${p.instances_ready} instance(s) running, ${p.jobs_completed} job(s) completed`,
        );
        return;
      }
      await this.#reconcile(work.system);
      await control.poll();
    }
  }

  async #applyChange(
    system: string,
    change: ServiceChange,
    row: ServiceRecord | undefined,
    control: ActionControl,
    deadlineMs: number,
  ): Promise<void> {
    const { store, systems } = this.#ctx;
    const name = modelServiceName(system, change.path);
    switch (change.kind) {
      case 'unchanged':
      case 'destroy':
        return;
      case 'create':
      case 'replace': {
        const spec = change.spec;
        const guid = serviceProcessGuid(system, spec.path, change.version);
        await ensureModelService(this.#ctx, control, name, spec, system);
        if (spec.subordinate_to === undefined) {
          await ensureUnits(this.#ctx, name, spec.instances);
          await ensureDesiredLRP(store, guid, spec, spec.instances, system, []);
        }
        await systems.putService({
          system,
          path: spec.path,
          kind: 'service',
          model_name: name,
          version: change.version,
          spec,
          process_guid: guid,
          old_process_guid: null,
        });
        await control.note(`${change.kind === 'create' ? 'created' : 'replaced'} ${spec.path} (${guid})`);
        return;
      }
      case 'update-in-place': {
        const spec = change.spec;
        if (!row) return;
        if (spec.subordinate_to === undefined) {
          // Units first: an instance the rep starts must find its unit (and its relation data).
          await ensureUnits(this.#ctx, name, spec.instances);
          await store.updateDesiredLRP({
            process_guid: row.process_guid,
            update: { instances: spec.instances, routes: spec.routes, annotation: spec.annotation },
          });
        }
        await systems.putService({ ...row, spec });
        await control.note(`updated ${spec.path} in place (${change.changed.join(', ')})`);
        return;
      }
      case 'rolling-update':
        if (row) await rollingUpdate(this.#ctx, control, row, change.spec, change.version, deadlineMs);
        return;
    }
  }

  /**
   * A job runs once per version: one that completed is not run again; one that failed is run again
   * by the next deploy of it (its old task is removed first).
   */
  async #ensureJob(system: string, job: JobDefinition, done: boolean, control: ActionControl): Promise<void> {
    const { store, systems } = this.#ctx;
    const guid = jobTaskGuid(system, job);
    let exists = await orAbsent(store.getTask({ task_guid: guid }));
    if (exists?.failed && (exists.state === 'COMPLETED' || exists.state === 'RESOLVING')) {
      await removeTask(store, guid);
      exists = undefined;
      await control.note(`running failed job ${job.path} again`);
    }
    if (!exists && !done) {
      await store
        .desireTask({
          task_guid: guid,
          domain: systemDomain(system),
          image: job.image,
          ...(job.command ? { command: job.command } : {}),
          env: job.env,
          memory_mb: job.memory_mb,
          disk_mb: job.disk_mb,
          result_file: '',
          completion_callback_url: '',
          placement_tags: [],
        })
        .catch(ignoreAlreadyExists);
      await control.note(`started job ${job.path} (${guid})`);
    }
    await systems.putService({
      system,
      path: job.path,
      kind: 'job',
      model_name: '',
      version: jobVersion(job),
      spec: job,
      process_guid: guid,
      old_process_guid: null,
    });
    // Its failure was recorded: the run that starts now has no outcome yet.
    if (!exists && !done) await systems.recordJobOutcome(system, job.path, jobVersion(job), '');
  }

  async #destroyService(row: SystemServiceRecord, control: ActionControl): Promise<void> {
    const { store, systems, runner } = this.#ctx;
    if (row.kind === 'job') {
      await removeTask(store, row.process_guid);
      await systems.deleteService(row.system, row.path);
      return;
    }
    await runTxn(runner, (v) =>
      v.service(row.model_name)?.life === 'alive' ? destroyService(v, row.model_name, this.#ctx.now()) : null,
    );
    for (const d of await store.listDesiredLRPs({ domain: systemDomain(row.system) })) {
      const g = d.process_guid;
      if (
        g === row.process_guid ||
        g === row.old_process_guid ||
        sidecarUnitIndex(row.process_guid, g) !== undefined
      )
        await removeDesiredLRP(store, g);
    }
    await systems.deleteService(row.system, row.path);
    await control.note(`destroyed ${row.path}`);
  }

  async #teardown(work: ActionWork, control: ActionControl): Promise<void> {
    const { store, systems } = this.#ctx;
    const system = work.system;
    const rows = await systems.listServices(system);
    const sidecarFirst = [...rows].sort((a, b) => Number(isSidecarRecord(b)) - Number(isSidecarRecord(a)));
    for (const row of sidecarFirst) {
      control.checkpoint();
      await this.#destroyService(row, control);
    }
    for (;;) {
      // Anything left in the domain: a sidecar LRP whose row was already gone after a crash, or
      // one the system agent created for a unit it read as alive just before the teardown began.
      for (const d of await store.listDesiredLRPs({ domain: systemDomain(system) }))
        await removeDesiredLRP(store, d.process_guid);
      for (const t of await store.listTasks({ domain: systemDomain(system) }))
        await removeTask(store, t.task_guid);
      await settle(this.#ctx);
      const verdict = planTeardown(await observeTeardown(this.#ctx, work));
      if (verdict.kind === 'gone') break;
      if (verdict.kind === 'failed')
        throw new BerthError('unavailable', `teardown of ${system}: ${verdict.reason}`);
      await control.poll();
    }
    await control.note(`tore down ${system}`);
  }
}

/**
 * A deploy runs only a definition today's rules accept: one accepted by an older berth (or
 * written past the API) that breaks a bound would write without end, so it fails with the
 * problems as its reason instead.
 */
function checkedDefinition(work: ActionWork): SystemDefinition {
  if (!work.definition)
    throw new BerthError('invalid_argument', `deploy ${work.id} has no readable definition`);
  const problems = storedDefinitionProblems(work.definition);
  if (problems.length > 0) throw new InvalidDefinitionError(problems);
  return work.definition;
}
