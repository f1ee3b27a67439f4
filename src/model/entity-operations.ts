import type { ActionControl } from './action-runner.js';
import type { DeployExecutor } from './deploy-executor.js';
import { isEntityActionKind } from './entity-action-kinds.js';
import { acceptEntityAction, readActionParams } from './entity-action-store.js';
import type { EntityExecutor } from './entity-executor.js';
import { precheckEntityRequest } from './entity-plan.js';
import { checkServicePaths, type EntityRequest, parseTeardownParams } from './entity-requests.js';
import type { ActionRecord, ActionWork } from './sql-system-store.js';
import type { SystemsContext } from './systems-context.js';

export interface EntityOperationsDeps {
  readonly ctx: SystemsContext;
  readonly owner: string;
  readonly newId: () => string;
  /** Hands an accepted action to the action runner (which also resumes it after a crash). */
  readonly run: (work: ActionWork) => void;
}

/**
 * The per-entity commands of seed 003 as the API asks for them: refused at once when a rule of the
 * model as it stands refuses (typed error, nothing written) or when a running action holds a
 * conflicting lock (`LockHeldError` naming it), else accepted as an action with its locks and run
 * in the background by the action runner.
 */
export class EntityOperations {
  readonly #deps: EntityOperationsDeps;

  constructor(deps: EntityOperationsDeps) {
    this.#deps = deps;
  }

  /** `system` is '' for a cell operation (a cell belongs to no system). */
  async request(system: string, request: EntityRequest, user: string): Promise<ActionRecord> {
    const { ctx } = this.#deps;
    checkServicePaths(request);
    const rows = system === '' ? [] : await ctx.systems.listServices(system);
    precheckEntityRequest(await ctx.runner.read(), rows, request, ctx.now());
    const row = await acceptEntityAction(ctx.systems.backend, {
      id: this.#deps.newId(),
      system,
      stored: { request, user },
      owner: this.#deps.owner,
      now: ctx.now(),
    });
    // The accepted row, read back as the action runner knows it (its definition is not a system's).
    const work = await ctx.systems.getWork(row.id);
    this.#deps.run(work);
    return ctx.systems.getAction(row.id);
  }
}

/**
 * The one executor the action runner calls: per-entity actions to the entity executor, deploys
 * and teardowns to the deploy executor, a forced teardown forcing the system's units first.
 */
export function dispatchAction(
  deploys: DeployExecutor,
  entities: EntityExecutor,
  ctx: SystemsContext,
): (work: ActionWork, control: ActionControl) => Promise<void> {
  return async (work, control) => {
    if (isEntityActionKind(work.kind)) return entities.execute(work, control);
    if (work.kind === 'teardown') {
      const params = parseTeardownParams(await readActionParams(ctx.systems.backend, work.id));
      if (params.force) await entities.forceSystemUnits(work, control, params.user);
    }
    return deploys.execute(work, control);
  };
}
