import { randomUUID } from 'node:crypto';
import type { BbsStore } from '../bbs/index.js';
import { InvalidArgumentError } from '../core/index.js';
import { ActionRunner, type DeployerLog } from './action-runner.js';
import { isLiveAction } from './action-states.js';
import type { AgentAction } from './agent-rules.js';
import { type AgentActionResult, applyCellAgentActions, cellAgentView } from './cell-agent-service.js';
import { sealDefinition } from './definition-secrets.js';
import { DeployExecutor } from './deploy-executor.js';
import { type DeployRecord, listDeployHistory, pickRollbackTarget } from './deploy-history.js';
import { EntityExecutor, type RecordUserAction } from './entity-executor.js';
import { dispatchAction, EntityOperations } from './entity-operations.js';
import type { StoredTeardownParams } from './entity-requests.js';
import { planLocks } from './lock-table.js';
import type { ModelData } from './memory-model-txn-runner.js';
import { type ActionProgress, actionProgress } from './rollout-observe.js';
import { SecretBox } from './secret-box.js';
import { type SqlBackend, SqlModelTxnRunner } from './sql-model-txn-runner.js';
import { type ActionRecord, type ActionWork, SqlSystemStore, type SystemRecord } from './sql-system-store.js';
import { SystemAgent } from './system-agent.js';
import {
  InvalidDefinitionError,
  type SystemDefinition,
  storedDefinitionProblems,
  validateSystemDefinition,
} from './system-definition.js';
import { parseSystemDefinition } from './system-definition-yaml.js';
import { type CellUnitRelations, relationsForCell, relationsForInstance } from './system-relations.js';
import { type SystemStatusJson, SystemStatusView } from './system-status-view.js';
import type { SystemsContext } from './systems-context.js';

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
  /** An action's timeout when its request names none (default 10 min). */
  readonly actionTimeoutMs?: number;
  /** Whether an owner is known dead without waiting for its TTL (default: same host, pid gone). */
  readonly ownerDead?: (owner: string) => boolean;
  readonly log?: DeployerLog;
  /** Awaited before an accepted action executes: tests hold an action (and its locks) open with it. */
  readonly gate?: (action: ActionRecord) => Promise<void>;
  /** BBS events committed in this process: a waiting deploy or teardown looks again at once. */
  readonly onEvents?: (listener: () => void) => () => void;
  /** Where the secret key lives (`secrets.key`, made on first use); without it, secrets are refused. */
  readonly secretKeyDir?: string;
  /** Container history's user items (the server binds `recordUserAction` to its history store). */
  readonly recordUserAction?: RecordUserAction;
}

/** The body of `POST /v1/deploys`. */
export interface DeployRequest {
  /** The YAML text, or the definition as a JSON value. */
  readonly definition: string | unknown;
  readonly path?: string;
  /** How long the deploy may last from its acceptance until rolled out (default: the server's, 10 min). */
  readonly timeout_ms?: number;
  /** Who asks (the token's user name), recorded in the deploy history. */
  readonly user?: string;
}

/**
 * The systems side of the server, as the API sees it: seed 004's deploys and teardowns accepted
 * under intention locks and run by the `ActionRunner` with the `DeployExecutor`, the system agent
 * (`SystemAgent`), the status view and the relation data cells ask for. Each room lives in its
 * own module; this class only builds them over one set of stores and hands requests to them.
 */
export class SystemDeployer {
  readonly systems: SqlSystemStore;
  readonly runner: SqlModelTxnRunner;
  readonly owner: string;
  /** Seed 003's per-entity commands (`unit destroy`, `service scale`, …), as actions. */
  readonly entities: EntityOperations;
  readonly #ctx: SystemsContext;
  readonly #newId: () => string;
  readonly #actions: ActionRunner;
  readonly #agent: SystemAgent;
  readonly #statusView: SystemStatusView;

  private constructor(options: SystemDeployerOptions, runner: SqlModelTxnRunner) {
    const now = options.now ?? (() => new Date());
    const keyDir = options.secretKeyDir;
    let box: SecretBox | undefined;
    this.runner = runner;
    this.systems = new SqlSystemStore(options.backend, now);
    this.#ctx = {
      store: options.store,
      systems: this.systems,
      runner,
      now,
      log: options.log ?? (() => {}),
      actionTimeoutMs: options.actionTimeoutMs ?? 600_000,
      ...(keyDir !== undefined ? { secrets: () => (box ??= SecretBox.forDataDir(keyDir)) } : {}),
    };
    this.#newId = options.newId ?? (() => `d-${randomUUID().slice(0, 12)}`);
    this.#agent = new SystemAgent(this.#ctx);
    this.#statusView = new SystemStatusView(this.#ctx);
    const executor = new DeployExecutor(this.#ctx, (system) => this.#agent.reconcile(system));
    const entityExecutor = new EntityExecutor(this.#ctx, options.recordUserAction);
    this.#actions = new ActionRunner({
      systems: this.systems,
      execute: dispatchAction(executor, entityExecutor, this.#ctx),
      ...(options.owner !== undefined ? { owner: options.owner } : {}),
      pollMs: options.pollMs ?? 500,
      heartbeatMs: options.heartbeatMs ?? 5_000,
      ownerTtlMs: options.ownerTtlMs ?? 20_000,
      ...(options.ownerDead ? { ownerDead: options.ownerDead } : {}),
      log: this.#ctx.log,
      ...(options.gate ? { gate: options.gate } : {}),
      ...(options.onEvents ? { onEvents: options.onEvents } : {}),
    });
    this.owner = this.#actions.owner;
    this.entities = new EntityOperations({
      ctx: this.#ctx,
      owner: this.owner,
      newId: this.#newId,
      run: (work) => this.#actions.run(work),
    });
  }

  static async open(options: SystemDeployerOptions): Promise<SystemDeployer> {
    const runner = await SqlModelTxnRunner.open(options.backend, (options.now ?? (() => new Date()))());
    return new SystemDeployer(options, runner);
  }

  /** Recovers actions whose owner died, then keeps heartbeating and watching for more. */
  async start(): Promise<void> {
    await this.#actions.start();
  }

  /** Stops the loops and waits for running actions to reach a checkpoint; they stay ours until a successor takes them over. */
  async stop(): Promise<void> {
    await this.#actions.stop();
  }

  /** Takes over (and resumes) every running action whose owner died. */
  async recover(): Promise<ActionWork[]> {
    return this.#actions.recover();
  }

  /** Waits until every action this deployer runs has ended (tests). */
  async idle(): Promise<void> {
    await this.#actions.idle();
  }

  /**
   * Validates first (every problem listed, nothing written), then accepts the deploy with its lock
   * rows in one transaction (or throws `LockHeldError`), then executes it in the background.
   */
  async deploy(req: DeployRequest): Promise<ActionRecord> {
    // Sealed before anything is written: the stored definition holds ciphertext only.
    const definition = sealDefinition(parseDefinition(req.definition), this.#ctx.secrets?.());
    return this.#acceptDeploy(definition, req.path ?? '/', req.user, req.timeout_ms);
  }

  async #acceptDeploy(
    definition: SystemDefinition,
    path: string,
    user: string | undefined,
    timeoutMs: number | undefined,
    rollbackOf?: string,
  ): Promise<ActionRecord> {
    planLocks({ kind: 'deploy', path });
    const accepted = await this.systems.acceptAction({
      id: this.#newId(),
      system: definition.system,
      action: { kind: 'deploy', path },
      definition,
      owner: this.owner,
      timeout_ms: timeoutMs ?? this.#ctx.actionTimeoutMs,
      ...(user !== undefined ? { user } : {}),
      ...(rollbackOf !== undefined ? { rollback_of: rollbackOf } : {}),
    });
    this.#actions.run({ ...accepted, definition });
    return accepted;
  }

  /** Every deploy and teardown of a system, newest first (`berth deploys`). */
  async deploys(system: string): Promise<DeployRecord[]> {
    return listDeployHistory(this.systems.backend, system);
  }

  /**
   * Redeploys an earlier deploy's stored definition (its secrets as they were sealed then) at its
   * path, as a new deploy recorded as a rollback of it: accepted under the same locks and rules as
   * any deploy, so it is refused at once while a conflicting action runs.
   */
  async rollback(system: string, deployId?: string, user?: string): Promise<ActionRecord> {
    const target = pickRollbackTarget(await this.deploys(system), deployId);
    const work = await this.systems.getWork(target.id);
    if (!work.definition)
      throw new InvalidArgumentError(`deploy ${target.id} has no readable definition`, { deploy: target.id });
    const problems = storedDefinitionProblems(work.definition);
    if (problems.length > 0) throw new InvalidDefinitionError(problems);
    return this.#acceptDeploy(work.definition, target.path, user, undefined, target.id);
  }

  /** `force`: the system's units are forced first (seed 003), recorded as `user`'s doing. */
  async teardown(
    system: string,
    options: { force?: boolean; user?: string; timeoutMs?: number | undefined } = {},
  ): Promise<ActionRecord> {
    const params: StoredTeardownParams = { force: options.force === true, user: options.user ?? 'anonymous' };
    const accepted = await this.systems.acceptAction({
      id: this.#newId(),
      system,
      action: { kind: 'teardown' },
      params,
      owner: this.owner,
      timeout_ms: options.timeoutMs ?? this.#ctx.actionTimeoutMs,
      ...(options.user !== undefined ? { user: options.user } : {}),
    });
    this.#actions.run({ ...accepted, definition: null });
    return accepted;
  }

  /** The system agent's periodic pass (`berth server` runs it as a cluster singleton). */
  async reconcileAll(): Promise<void> {
    await this.#agent.reconcileAll();
  }

  /** The system agent's pass over one system. */
  async reconcile(system: string): Promise<void> {
    await this.#agent.reconcile(system);
  }

  async listSystems(): Promise<{ name: string; state: string; reason?: string }[]> {
    return this.#statusView.listSystems();
  }

  async status(name: string): Promise<SystemStatusJson> {
    return this.#statusView.status(name);
  }

  /** What a cell's agents see (`GET /v1/agents/cells/{id}/model`). */
  async cellAgentModel(cellId: string): Promise<ModelData> {
    return cellAgentView(await this.runner.read(), cellId);
  }

  /** A cell's agents' actions, each rebuilt and applied in its own transaction. */
  async applyCellAgentActions(cellId: string, actions: readonly AgentAction[]): Promise<AgentActionResult[]> {
    return applyCellAgentActions(this.runner, cellId, actions, this.#ctx.now());
  }

  /** The relation data of every system unit whose instance runs on a cell. */
  async relationsForCell(cellId: string): Promise<CellUnitRelations[]> {
    return relationsForCell(this.#ctx, cellId);
  }

  /** One instance's relation data, for a container about to start (its env snapshot). */
  async relationsForInstance(processGuid: string, index: number): Promise<CellUnitRelations> {
    return relationsForInstance(this.#ctx, processGuid, index);
  }

  async getAction(id: string): Promise<ActionRecord> {
    return this.systems.getAction(id);
  }

  /** An action with, while it lives, how far it got (`berth deploy --wait` shows it). */
  async actionProgress(id: string): Promise<ActionRecord & { readonly progress?: ActionProgress }> {
    const work = await this.systems.getWork(id);
    const { definition: _definition, ...action } = work;
    if (!isLiveAction(action.state)) return action;
    return { ...action, progress: await actionProgress(this.#ctx, work) };
  }

  async getSystemRecord(name: string): Promise<SystemRecord | undefined> {
    return this.systems.getSystem(name);
  }
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
