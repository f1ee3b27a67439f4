import { BerthError } from '../core/index.js';
import { type AgentAction, agentActionCell, agentActionTxn } from './agent-rules.js';
import type { ModelData } from './memory-model-txn-runner.js';
import { type ModelTxnRunner, runTxn } from './model-txn-runner.js';
import type { ModelView, RelationDoc, ServiceDoc, UnitDoc } from './model-types.js';

/** The server's half of the cell agents: what a cell's agents see, and their actions applied. */

/** What became of one action a cell's agent sent. */
export interface AgentActionResult {
  /** A transaction was committed; false when there was nothing (left) to do or it was refused. */
  readonly applied: boolean;
  /** Why it was refused: a rule's typed error, or another cell's unit. */
  readonly error?: { readonly code: string; readonly message: string };
}

/**
 * The part of the model a cell's unit and machine agents act on: the cell, every unit on it
 * (principals and their sidecars, which share the cell), their services, the relations of those
 * services with the services at their other ends, and the scopes these units are in. Counts over
 * this part are local (how many units of a service are elsewhere is not in it): the agent only
 * decides what to do; the server rebuilds each transaction from the whole model.
 */
export function cellAgentView(view: ModelView, cell: string): ModelData {
  const cellDoc = view.cell(cell);
  if (!cellDoc) return { cells: [], services: [], units: [], relations: [], scopes: [], cleanups: [] };
  const units: UnitDoc[] = [];
  for (const name of view.unitsOnCell(cell)) {
    const u = view.unit(name);
    if (u) units.push(u);
  }
  const serviceNames = new Set(units.map((u) => u.service));
  const relations = new Map<string, RelationDoc>();
  for (const service of [...serviceNames]) {
    for (const id of view.relationsOfService(service)) {
      const rel = view.relation(id);
      if (!rel) continue;
      relations.set(id, rel);
      for (const end of rel.endpoints) serviceNames.add(end);
    }
  }
  const services: ServiceDoc[] = [];
  for (const name of serviceNames) {
    const s = view.service(name);
    if (s) services.push(s);
  }
  const scopes: [string, string][] = [];
  for (const u of units) for (const rel of view.scopesOfUnit(u.name)) scopes.push([rel, u.name]);
  return { cells: [cellDoc], services, units, relations: [...relations.values()], scopes, cleanups: [] };
}

/** A refusal the agent can read (TxnAbortedError: still changing after runTxn's retries). */
function refusal(err: unknown): AgentActionResult {
  if (err instanceof BerthError) return { applied: false, error: { code: err.code, message: err.message } };
  throw err;
}

/**
 * Applies a cell agent's actions, each in its own transaction rebuilt from the current model (the
 * agent's view may be stale; the asserts catch what changed). An action on a unit of another cell
 * is refused: a cell acts for its own units only. Units not on any cell and the removal of Dead
 * cells stay with the server.
 */
export async function applyCellAgentActions(
  runner: ModelTxnRunner,
  cell: string,
  actions: readonly AgentAction[],
  now: Date,
): Promise<AgentActionResult[]> {
  const results: AgentActionResult[] = [];
  for (const action of actions) {
    try {
      const txn = await runTxn(runner, (v) => {
        const owner = agentActionCell(v, action);
        if (owner === null) return null;
        if (owner !== cell)
          throw new BerthError(
            'forbidden',
            `Cell ${cell} cannot take ${action.kind} for ${describe(action)}: it belongs to cell ${owner}`,
            { action: action.kind, owner },
          );
        return agentActionTxn(v, action, now);
      });
      results.push({ applied: txn !== null });
    } catch (err) {
      results.push(refusal(err));
    }
  }
  return results;
}

function describe(action: AgentAction): string {
  return 'unit' in action ? `unit ${action.unit}` : `cell ${action.cell}`;
}
