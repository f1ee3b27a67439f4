import { type AgentStep, cellAgentStep, provisionerStep, unitAgentStep } from './agent-rules.js';
import { runDueCleanups } from './cleanup-jobs.js';
import { type ModelTxnRunner, runTxn } from './model-txn-runner.js';
import type { ModelView } from './model-types.js';

export interface SettleOptions {
  readonly now: Date;
  readonly batchSize?: number;
  /** Passes before giving up; a pass runs every cleanup and every agent until each is idle. */
  readonly maxPasses?: number;
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
 * UA, each cell's MA (and the server's stand-in for units without a cell), the provisioner. The
 * rep runs the same steps for its own cell; this is for tests, benchmarks and the embedded server.
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
    const units: string[] = [];
    for (const svc of view.services()) units.push(...view.unitsOfService(svc.name));
    const cells = [...view.cells()].map((c) => c.id);
    for (const unit of units) moved += await drive(runner, (v) => unitAgentStep(v, unit, options.now));
    const unassigned = units.filter((u) => view.unit(u)?.cell_id === null);
    moved += await drive(runner, (v) => cellAgentStep(v, null, unassigned));
    for (const cell of cells) moved += await drive(runner, (v) => cellAgentStep(v, cell));
    for (const cell of cells) moved += await drive(runner, (v) => provisionerStep(v, cell));
    txns += moved;
    if (moved === 0) break;
  }
  return { txns, passes, errors };
}
