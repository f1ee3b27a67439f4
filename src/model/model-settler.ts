import { type AgentStep, cellAgentStep, provisionerStep, unitAgentStep } from './agent-rules.js';
import { runDueCleanups } from './cleanup-jobs.js';
import { type ModelTxnRunner, runTxn } from './model-txn-runner.js';
import type { ModelView } from './model-types.js';

export interface SettleOptions {
  readonly now: Date;
  readonly batchSize?: number;
  /** Passes before giving up; a pass runs every cleanup and every agent until each is idle. */
  readonly maxPasses?: number;
  /**
   * Cells whose own agents step their units and themselves (a cell's rep, `CellAgent`): the
   * settle leaves them alone. Dead cells are still removed here (the provisioner is the server's).
   */
  readonly agentCells?: ReadonlySet<string>;
}

export interface SettleReport {
  readonly txns: number;
  readonly passes: number;
  readonly errors: readonly unknown[];
}

async function drive(runner: ModelTxnRunner, next: (view: ModelView) => AgentStep): Promise<number> {
  let n = 0;
  for (;;) {
    const applied = await runTxn(runner, (view) => {
      const s = next(view);
      return s.kind === 'txn' ? s.txn : null;
    });
    if (applied === null) return n;
    n++;
  }
}

/**
 * Plays every agent of seed 003 against the model until nothing moves: due cleanups, each unit's
 * UA, each cell's MA (and the server's stand-in for units without a cell), the provisioner. A cell
 * that runs its own agents (`agentCells`) steps its units itself, through `CellAgent`.
 */
export async function settleModel(runner: ModelTxnRunner, options: SettleOptions): Promise<SettleReport> {
  let txns = 0;
  const errors: unknown[] = [];
  const maxPasses = options.maxPasses ?? 100;
  let passes = 0;
  while (passes < maxPasses) {
    passes++;
    let moved = 0;
    const cleanups = await runDueCleanups(runner, options);
    moved += cleanups.txns;
    errors.push(...cleanups.errors.map((e) => e.error));
    const view = await runner.read();
    const elsewhere = options.agentCells ?? new Set<string>();
    const units: string[] = [];
    for (const svc of view.services())
      for (const u of view.unitsOfService(svc.name))
        if (!elsewhere.has(view.unit(u)?.cell_id ?? '')) units.push(u);
    const cells = [...view.cells()].map((c) => c.id);
    for (const unit of units) moved += await drive(runner, (v) => unitAgentStep(v, unit, options.now));
    const unassigned = units.filter((u) => view.unit(u)?.cell_id === null);
    moved += await drive(runner, (v) => cellAgentStep(v, null, unassigned, options.now));
    for (const cell of cells)
      if (!elsewhere.has(cell)) moved += await drive(runner, (v) => cellAgentStep(v, cell, [], options.now));
    for (const cell of cells) moved += await drive(runner, (v) => provisionerStep(v, cell, options.now));
    txns += moved;
    if (moved === 0) break;
  }
  return { txns, passes, errors };
}
