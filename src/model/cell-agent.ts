import { runLoop } from '../core/index.js';
import { type AgentAction, cellAgentStep, unitAgentStep } from './agent-rules.js';
import type { AgentActionResult } from './cell-agent-service.js';
import { MemoryModel, type ModelData } from './memory-model-txn-runner.js';
import type { ModelView } from './model-types.js';

/** How a cell's agents reach the model: the server's `/v1/agents/cells/{id}` endpoints. */
export interface CellAgentTransport {
  /** The part of the model this cell's agents act on (`cellAgentView`). */
  view(): Promise<ModelData>;
  /** Each action applied in its own transaction, in order; one result per action. */
  act(actions: readonly AgentAction[]): Promise<readonly AgentActionResult[]>;
}

export interface CellAgentOptions {
  readonly cellId: string;
  readonly transport: CellAgentTransport;
  /** Between passes when nothing moved (default 1 s). */
  readonly intervalMs?: number;
  /** Rounds of view → actions in one pass while something keeps moving (default 50). */
  readonly maxRounds?: number;
  readonly now?: () => Date;
  readonly log?: (message: string) => void;
}

/**
 * Seed 003 "Agents" for one cell, as one decision over its part of the model: the next action of
 * each unit's agent (UA) and of the cell's (MA). Each unit's agent moves one step per round, as a
 * Juju agent handles one change at a time; their actions are independent of each other (each names
 * the unit acting, or a sidecar only its principal removes, or a principal only the MA removes), so
 * a round sends them together.
 */
export function decideCellAgents(view: ModelView, cell: string, now: Date): { actions: AgentAction[] } {
  const actions: AgentAction[] = [];
  for (const unit of [...view.unitsOnCell(cell)].sort()) {
    const s = unitAgentStep(view, unit, now);
    if (s.kind === 'txn') actions.push(s.action);
  }
  const m = cellAgentStep(view, cell, [], now);
  if (m.kind === 'txn') actions.push(m.action);
  return { actions };
}

export interface CellAgentPass {
  readonly applied: number;
  /** The applied actions, as `kind subject`. */
  readonly done: readonly string[];
  readonly refused: readonly string[];
}

/**
 * The unit and machine agents of one cell, run by that cell's process beside its rep (DESIGN.md:
 * the rep is both agents). Each pass reads the cell's part of the model from the server, decides,
 * sends the actions, and repeats while something moved; the server rebuilds every transaction from
 * the whole model, so a stale view costs a refusal, never a wrong write.
 */
export class CellAgent {
  readonly #options: CellAgentOptions;
  #loop: { controller: AbortController; done: Promise<void> } | undefined;
  #stopped = false;
  #lastError = '';
  /** Last pass's refusals: one that repeats pass after pass is logged when it starts, not each second. */
  #lastRefused = new Set<string>();

  constructor(options: CellAgentOptions) {
    this.#options = options;
  }

  start(): void {
    if (this.#loop) return;
    this.#stopped = false;
    const controller = new AbortController();
    const done = runLoop({
      name: 'model agent',
      signal: controller.signal,
      intervalMs: this.#options.intervalMs ?? 1_000,
      // #tick never throws: it reports a failed pass itself (once per distinct error).
      round: () => this.#tick(),
    });
    this.#loop = { controller, done };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const loop = this.#loop;
    this.#loop = undefined;
    loop?.controller.abort();
    await loop?.done;
  }

  async #tick(): Promise<void> {
    try {
      const pass = await this.passOnce();
      // What the agents did, for the operator: a line per pass that changed the model.
      if (pass.done.length > 0) {
        const shown = pass.done.slice(0, 8).join(', ');
        const more = pass.done.length > 8 ? ` and ${pass.done.length - 8} more` : '';
        this.#options.log?.(`model agent: ${shown}${more}`);
      }
      for (const r of pass.refused) if (!this.#lastRefused.has(r)) this.#options.log?.(`model agent: ${r}`);
      this.#lastRefused = new Set(pass.refused);
      this.#lastError = '';
    } catch (err) {
      // The server is away or restarting: say so once, keep trying.
      const message = String(err instanceof Error ? err.message : err);
      if (message !== this.#lastError) this.#options.log?.(`model agent: ${message}`);
      this.#lastError = message;
    }
  }

  /** Rounds of view → decide → act until a round applies nothing (or `maxRounds`). */
  async passOnce(): Promise<CellAgentPass> {
    const { cellId, transport } = this.#options;
    const now = this.#options.now ?? (() => new Date());
    const maxRounds = this.#options.maxRounds ?? 50;
    let applied = 0;
    let rounds = 0;
    const refused: string[] = [];
    const done: string[] = [];
    while (rounds < maxRounds && !this.#stopped) {
      rounds++;
      const view = MemoryModel.fromData(await transport.view());
      const decision = decideCellAgents(view, cellId, now());
      if (decision.actions.length === 0) break;
      const results = await transport.act(decision.actions);
      let moved = 0;
      results.forEach((r, i) => {
        const a = decision.actions[i];
        if (!a) return;
        if (r.applied) {
          moved++;
          done.push(`${a.kind} ${'unit' in a ? a.unit : a.cell}`);
        } else if (r.error) refused.push(`${a.kind} refused: ${r.error.message}`);
      });
      applied += moved;
      if (moved === 0) break;
    }
    return { applied, done, refused };
  }
}
