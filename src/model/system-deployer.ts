import { randomUUID } from 'node:crypto';
import type { BbsStore } from '../bbs/index.js';
import { InvalidArgumentError } from '../core/index.js';
import { ActionRunner, type DeployerLog } from './action-runner.js';
import type { AgentAction } from './agent-rules.js';
import { type AgentActionResult, applyCellAgentActions, cellAgentView } from './cell-agent-service.js';
import { DeployExecutor } from './deploy-executor.js';
import { EntityExecutor, type RecordUserAction } from './entity-executor.js';
import { dispatchAction, EntityOperations } from './entity-operations.js';
import type { StoredTeardownParams } from './entity-requests.js';
import { planLocks } from './lock-table.js';
import type { ModelData } from './memory-model-txn-runner.js';
import { type SqlBackend, SqlModelTxnRunner } from './sql-model-txn-runner.js';
import { type ActionRecord, type ActionWork, SqlSystemStore, type SystemRecord } from './sql-system-store.js';
import { SystemAgent } from './system-agent.js';
import {
  InvalidDefinitionError,
  parseSystemDefinition,
  type SystemDefinition,
  validateSystemDefinition,
} from './system-definition.js';
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
  /** How long a rolling update or teardown waits for instances before it fails. */
  readonly actionTimeoutMs?: number;
  /** Whether an owner is known dead without waiting for its TTL (default: same host, pid gone). */
  readonly ownerDead?: (owner: string) => boolean;
  readonly log?: DeployerLog;
  /** Awaited before an accepted action executes: tests hold an action (and its locks) open with it. */
  readonly gate?: (action: ActionRecord) => Promise<void>;
  /** Container history's user items (the server binds `recordUserAction` to its history store). */
  readonly recordUserAction?: RecordUserAction;
}

/** The body of `POST /v1/deploys`. */
export interface DeployRequest {
  /** The YAML text, or the definition as a JSON value. */
  readonly definition: string | unknown;
  readonly path?: string;
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
    this.runner = runner;
    this.systems = new SqlSystemStore(options.backend, now);
    this.#ctx = {
      store: options.store,
      systems: this.systems,
      runner,
      now,
      log: options.log ?? (() => {}),
      actionTimeoutMs: options.actionTimeoutMs ?? 600_000,
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
    this.#actions.run({ ...accepted, definition });
    return accepted;
  }

  /** `force`: the system's units are forced first (seed 003), recorded as `user`'s doing. */
  async teardown(system: string, options: { force?: boolean; user?: string } = {}): Promise<ActionRecord> {
    const params: StoredTeardownParams = { force: options.force === true, user: options.user ?? 'anonymous' };
    const accepted = await this.systems.acceptAction({
      id: this.#newId(),
      system,
      action: { kind: 'teardown' },
      params,
      owner: this.owner,
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
