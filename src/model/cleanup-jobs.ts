import { type ModelTxnRunner, runTxn } from './model-txn-runner.js';
import type { CleanupJob, ModelTxn, ModelView } from './model-types.js';
import { destroyRelationPart } from './relation-rules.js';
import { leaveScopePart, unitRemovalPart } from './removal-parts.js';
import { destroySidecarUnit } from './sidecar-rules.js';
import {
  combine,
  countEq,
  first,
  lifeIn,
  part,
  removeOp,
  setLife,
  type TxnPart,
  take,
  txn,
} from './txn-parts.js';
import { unitDyingPart } from './unit-rules.js';

/** How many units one `service-dying` step makes Dying: the bound on its transaction's size. */
export const defaultCleanupBatchSize = 500;

export interface CleanupOptions {
  readonly now: Date;
  /** Units made Dying per `service-dying` transaction (seed: no transaction of 100k operations). */
  readonly batchSize?: number;
}

function finish(job: CleanupJob, why: string, ...parts: readonly TxnPart[]): ModelTxn {
  return txn(`cleanup ${job.kind}: ${why}`, ...parts, part([], [{ op: 'remove-cleanup', id: job.id }]));
}

/**
 * One step of a cleanup job: the next transaction to run. Every step changes the model or finishes
 * the job (the finishing transaction removes the job row), so a runner that repeats `cleanupStep`
 * on a fresh view until the job is gone terminates. Steps are idempotent: a step rebuilt after a
 * crash or an aborted txn re-reads the model and picks the next entity still to do.
 */
export function cleanupStep(view: ModelView, job: CleanupJob, options: CleanupOptions): ModelTxn {
  switch (job.kind) {
    case 'service-dying':
      return serviceDyingStep(view, job, options);
    case 'unit-dying':
      return unitDyingStep(view, job, options);
    case 'relation-dying':
      return relationDyingStep(view, job, options);
    case 'force-unit':
      return forceUnitStep(view, job);
  }
}

/**
 * Seed 003 Services: destroying a service makes "all the units ... Dying" and "all relations in which
 * the service is participating ... Dying". Relations one per transaction; units in batches of
 * `batchSize`, never one transaction for all (Units: "that's just crazy"). When nothing Alive is left
 * the job ends; a service left with nothing at all is removed by the same transaction.
 */
function serviceDyingStep(view: ModelView, job: CleanupJob, options: CleanupOptions): ModelTxn {
  const name = job.target;
  const svc = view.service(name);
  if (svc?.life !== 'dying') return finish(job, 'service gone');
  const dying = part([lifeIn('service', name, 'dying')], []);
  for (const id of view.relationsOfService(name)) {
    const rel = view.relation(id);
    if (rel?.life === 'alive')
      return txn('cleanup service-dying: relation', dying, destroyRelationPart(view, rel, options.now));
  }
  const batch = take(view.unitsOfService(name, 'alive'), options.batchSize ?? defaultCleanupBatchSize);
  if (batch.length > 0) {
    return txn(
      'cleanup service-dying: units',
      dying,
      ...batch.map((u) => unitDyingPart(view, u, options.now)),
    );
  }
  const units = view.count('units-of-service', name);
  const relations = view.count('relations-of-service', name);
  if (units === 0 && relations === 0) {
    return finish(
      job,
      'service removed',
      part(
        [dying.asserts[0]!, countEq('units-of-service', name, 0), countEq('relations-of-service', name, 0)],
        [removeOp('service', name)],
      ),
    );
  }
  // Dying units and relations remain; their agents remove the service as the last reference goes.
  return finish(
    job,
    'all dying',
    part([countEq('alive-units-of-service', name, 0), countEq('alive-relations-of-service', name, 0)], []),
  );
}

/** Seed 003 Units: "When a principal unit becomes Dying, all its subordinates must also become Dying." */
function unitDyingStep(view: ModelView, job: CleanupJob, options: CleanupOptions): ModelTxn {
  const u = view.unit(job.target);
  if (!u || u.life === 'alive') return finish(job, 'unit gone');
  for (const sub of view.subordinatesOf(u.name)) {
    if (view.unit(sub)?.life === 'alive') {
      const step = destroySidecarUnit(view, sub, options.now);
      if (step) return step;
    }
  }
  return finish(job, 'sidecars dying', part([countEq('alive-subordinates-of-unit', u.name, 0)], []));
}

/** Seed 003 References: "destroying a container relation destroys all subordinates in the relation". */
function relationDyingStep(view: ModelView, job: CleanupJob, options: CleanupOptions): ModelTxn {
  const rel = view.relation(job.target);
  if (rel?.life !== 'dying' || rel.scope !== 'container') return finish(job, 'relation gone');
  const sidecarService = rel.endpoints[1];
  const next = first(view.unitsOfService(sidecarService, 'alive'));
  if (next !== undefined) {
    const step = destroySidecarUnit(view, next, options.now);
    if (step) return step;
  }
  return finish(job, 'sidecars dying', part([countEq('alive-units-of-service', sidecarService, 0)], []));
}

/**
 * Seed 003 "Implementation issues", forcible destruction: "that the unit leave several relation
 * scopes, ... remove several relations ..., remove some services on the other end ... *and* that all
 * the same things happen for all the unit's subordinates". Instead of the seed's "big ugly bottleneck
 * txn", one entity per transaction: scopes, then each sidecar (scopes, Dying, Dead, removed), then
 * the unit Dead and removed. The forced path does not wait for any agent.
 */
function forceUnitStep(view: ModelView, job: CleanupJob): ModelTxn {
  const u = view.unit(job.target);
  if (!u) return finish(job, 'unit gone');
  const forced = forcedStepFor(view, u.name);
  if (forced) return forced;
  for (const sub of view.subordinatesOf(u.name)) {
    const step = forcedStepFor(view, sub);
    if (step) return step;
  }
  // Only a Dead unit without sidecars and scopes remains: remove it (this also removes both jobs).
  return txn('cleanup force-unit: remove', unitRemovalPart(view, u.name));
}

/** The next forced move of one unit towards Dead, or null once it is Dead with nothing left. */
function forcedStepFor(view: ModelView, unit: string): ModelTxn | null {
  const u = view.unit(unit);
  if (!u) return null;
  const scope = first(view.scopesOfUnit(unit));
  if (scope !== undefined) return txn('cleanup force-unit: leave scope', leaveScopePart(view, scope, unit));
  if (u.principal !== null && u.life === 'dead') {
    return txn('cleanup force-unit: remove sidecar', unitRemovalPart(view, unit));
  }
  if (view.count('subordinates-of-unit', unit) > 0) return null;
  if (u.life === 'alive')
    return txn(
      'cleanup force-unit: dying',
      part([lifeIn('unit', unit, 'alive')], [setLife('unit', unit, 'dying')]),
    );
  if (u.life === 'dying') {
    return txn(
      'cleanup force-unit: dead',
      combine(
        part(
          [
            lifeIn('unit', unit, 'dying'),
            countEq('subordinates-of-unit', unit, 0),
            countEq('scopes-of-unit', unit, 0),
          ],
          [setLife('unit', unit, 'dead')],
        ),
      ),
    );
  }
  return null;
}

/** Jobs due at `now`, oldest first (ties by id, so runs are deterministic). */
export function dueCleanups(view: ModelView, now: Date): CleanupJob[] {
  const at = now.toISOString();
  return [...view.cleanups()]
    .filter((j) => j.due_at <= at)
    .sort((a, b) =>
      a.due_at < b.due_at ? -1 : a.due_at > b.due_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
    );
}

export interface CleanupRunReport {
  readonly txns: number;
  readonly finished: readonly string[];
  /** Jobs that failed this run; they stay in the store and are retried by the next run. */
  readonly errors: readonly { readonly job: string; readonly error: unknown }[];
}

export interface RunCleanupsOptions extends CleanupOptions {
  /** A guard against a step that makes no progress; no correct step does. */
  readonly maxTxns?: number;
}

/**
 * Runs every due job to the end, one step per transaction, rebuilding a step whose asserts failed
 * (Juju's cleanup worker). A job that fails otherwise is reported and left for the next run; the
 * other jobs go on (DESIGN.md: errors are collected, the job is retried until it succeeds).
 */
export async function runDueCleanups(
  runner: ModelTxnRunner,
  options: RunCleanupsOptions,
): Promise<CleanupRunReport> {
  const maxTxns = options.maxTxns ?? Number.MAX_SAFE_INTEGER;
  let txns = 0;
  const finished: string[] = [];
  const errors: { job: string; error: unknown }[] = [];
  const failed = new Set<string>();
  for (;;) {
    const due = dueCleanups(await runner.read(), options.now).filter((j) => !failed.has(j.id));
    if (due.length === 0) break;
    for (const job of due) {
      try {
        for (;;) {
          if (txns >= maxTxns) throw new Error(`cleanup ran ${maxTxns} transactions without finishing`);
          const applied = await runTxn(runner, (view) => {
            const current = view.cleanup(job.id);
            return current ? cleanupStep(view, current, options) : null;
          });
          if (applied === null) break;
          txns++;
        }
        finished.push(job.id);
      } catch (error) {
        failed.add(job.id);
        errors.push({ job: job.id, error });
      }
    }
  }
  return { txns, finished, errors };
}
