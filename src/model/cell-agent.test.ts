import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ModelBuilder } from '../testing/model-builder.js';
import { CellAgent, type CellAgentTransport, decideCellAgents } from './cell-agent.js';
import { applyCellAgentActions, cellAgentView } from './cell-agent-service.js';
import { assignUnitToCell } from './cell-rules.js';
import { MemoryModel, type MemoryModelTxnRunner } from './memory-model-txn-runner.js';
import { settleModel } from './model-settler.js';
import { destroyService } from './service-rules.js';
import { relationId, unitName } from './txn-parts.js';
import { addUnit } from './unit-rules.js';

const now = new Date('2026-11-22T12:00:00.000Z');
const u = unitName;

/**
 * web#0 on c1 and web#1 on c2, each with its sidecar log#i; db#0 on c2; web–db global and web–log
 * container relations with every unit in its scopes.
 */
function twoCells(): ModelBuilder {
  const m = new ModelBuilder()
    .cell('c1')
    .cell('c2')
    .service('web')
    .service('db')
    .service('log', true)
    .units('web', 2, ['c1', 'c2'])
    .units('db', 1, ['c2'])
    .relate('web', 'db')
    .relate('web', 'log', 'container')
    .sidecar(u('web', 0), 'log')
    .sidecar(u('web', 1), 'log');
  for (const unit of [u('web', 0), u('web', 1), u('db', 0)]) m.enter('web', 'db', unit);
  for (const unit of [u('web', 0), u('web', 1), u('log', 0), u('log', 1)]) m.enter('web', 'log', unit);
  return m;
}

/** The HTTP seam without HTTP: the view goes through JSON as it would on the wire. */
function inProcess(runner: MemoryModelTxnRunner, cell: string): CellAgentTransport {
  return {
    view: async () => JSON.parse(JSON.stringify(cellAgentView(runner.model, cell))),
    act: (actions) => applyCellAgentActions(runner, cell, actions, now),
  };
}

describe('a cell agent (seed 003 Agents run by the cell)', () => {
  it("sees its cell's units, their services and relations, and its own scopes only", () => {
    const m = twoCells();
    const data = cellAgentView(m.view, 'c1');
    assert.deepEqual(data.cells, [{ id: 'c1', life: 'alive' }]);
    assert.deepEqual(data.units.map((x) => x.name).sort(), [u('log', 0), u('web', 0)]);
    assert.deepEqual(data.services.map((s) => s.name).sort(), ['db', 'log', 'web']);
    assert.deepEqual(data.relations.map((r) => r.id).sort(), [
      relationId('web', 'db'),
      relationId('web', 'log'),
    ]);
    assert.ok(data.scopes.every(([, unit]) => unit === u('web', 0) || unit === u('log', 0)));
    assert.equal(data.scopes.length, 3);
    // Loadable as a model: every reference in it resolves.
    assert.equal([...MemoryModel.fromData(data).unitsOnCell('c1')].length, 2);
    assert.deepEqual(cellAgentView(m.view, 'nowhere').units, []);
  });

  it('decides only for units on its cell', () => {
    const m = twoCells();
    m.apply((v) => destroyService(v, 'web', now));
    const view = MemoryModel.fromData(cellAgentView(m.view, 'c1'));
    const { actions } = decideCellAgents(view, 'c1', now);
    assert.ok(actions.length > 0);
    for (const a of actions) {
      assert.ok('unit' in a, JSON.stringify(a));
      assert.ok([u('web', 0), u('log', 0)].includes(a.unit), JSON.stringify(a));
    }
    assert.ok(actions.some((a) => a.kind === 'unit-dying' && a.unit === u('web', 0)));
  });

  it("the server's settle leaves agent cells' units alone; the cells' agents tear a service down", async () => {
    const m = twoCells();
    m.apply((v) => destroyService(v, 'web', now));
    const agentCells = new Set(['c1', 'c2']);
    await settleModel(m.runner, { now, agentCells });
    // The server's cleanup jobs make the units Dying (in batches); leaving scopes, Dead and removal
    // are the agents' steps, which the server did not take for these cells.
    for (const unit of [u('web', 0), u('web', 1)]) {
      assert.equal(m.view.unit(unit)?.life, 'dying', unit);
      assert.ok(m.view.isInScope(relationId('web', 'db'), unit), `the server made ${unit} leave its scope`);
    }
    // Without agent cells the same settle does it all: the check above can fail.
    const control = twoCells();
    control.apply((v) => destroyService(v, 'web', now));
    await settleModel(control.runner, { now });
    assert.equal(control.view.unit(u('web', 0)), undefined);

    const agents = ['c1', 'c2'].map(
      (cell) => new CellAgent({ cellId: cell, transport: inProcess(m.runner, cell), now: () => now }),
    );
    for (let i = 0; i < 10; i++) {
      let moved = 0;
      for (const agent of agents) moved += (await agent.passOnce()).applied;
      moved += (await settleModel(m.runner, { now, agentCells })).txns;
      if (moved === 0) break;
    }
    const units = [...m.view.toData().units.map((x) => x.name)];
    assert.deepEqual(units, [u('db', 0)], 'web and log units are gone; db stays');
    assert.equal(m.view.service('web'), undefined);
    assert.equal(m.view.relation(relationId('web', 'db')), undefined);
    assert.equal(m.view.relation(relationId('web', 'log')), undefined);
    assert.equal(m.view.unit(u('db', 0))?.life, 'alive');
    assert.deepEqual([...m.view.scopesOfUnit(u('db', 0))], []);
  });

  it("a unit enters relation scope only once assigned, through its cell's agent (issue 19 item 10)", async () => {
    const m = new ModelBuilder().cell('c1').service('web').service('db').units('db', 1, ['c1']);
    m.apply((v) => addUnit(v, 'web', 0));
    m.relate('web', 'db');
    const web0 = u('web', 0);
    const rel = relationId('web', 'db');
    // Unassigned: neither the server's settle nor any cell's agent puts it in scope.
    await settleModel(m.runner, { now });
    assert.ok(!m.view.isInScope(rel, web0), 'an unassigned unit entered scope');
    assert.deepEqual(
      await applyCellAgentActions(m.runner, 'c1', [{ kind: 'enter-scope', unit: web0, relation: rel }], now),
      [{ applied: false }],
    );
    m.apply((v) => assignUnitToCell(v, web0, 'c1'));
    // Assigned to c1, which runs its own agents: the server still leaves the unit alone...
    await settleModel(m.runner, { now, agentCells: new Set(['c1']) });
    assert.ok(!m.view.isInScope(rel, web0), "the server entered scope for an agent cell's unit");
    // ...and c1's agent enters it.
    const agent = new CellAgent({ cellId: 'c1', transport: inProcess(m.runner, 'c1'), now: () => now });
    const pass = await agent.passOnce();
    assert.ok(pass.done.includes(`enter-scope ${web0}`), pass.done.join());
    assert.ok(m.view.isInScope(rel, web0));
  });

  it("refuses an action on another cell's unit, and takes nothing for units on no cell or for removing cells", async () => {
    const m = twoCells();
    m.apply((v) => destroyService(v, 'web', now));
    const [foreign, cellRemoval] = await applyCellAgentActions(
      m.runner,
      'c1',
      [
        { kind: 'unit-dying', unit: u('web', 1) },
        { kind: 'remove-cell', cell: 'c1' },
      ],
      now,
    );
    assert.equal(foreign?.applied, false);
    assert.equal(foreign?.error?.code, 'forbidden');
    assert.match(foreign?.error?.message ?? '', /belongs to cell c2/);
    assert.deepEqual(cellRemoval, { applied: false });
    assert.equal(m.view.unit(u('web', 1))?.life, 'alive');
    assert.ok(m.view.cell('c1'));
  });

  it('an illegal action comes back as the rule refused it; a stale one as nothing left to do', async () => {
    const m = twoCells();
    const [illegal] = await applyCellAgentActions(
      m.runner,
      'c1',
      [{ kind: 'remove-unit', unit: u('web', 0) }],
      now,
    );
    assert.equal(illegal?.applied, false);
    assert.equal(illegal?.error?.code, 'conflict');
    assert.match(illegal?.error?.message ?? '', /alive, not Dead/);

    m.apply((v) => destroyService(v, 'web', now));
    const stale = decideCellAgents(MemoryModel.fromData(cellAgentView(m.view, 'c1')), 'c1', now);
    // Someone else (the server, before the cell announced its agent) took the step meanwhile.
    const first = await applyCellAgentActions(m.runner, 'c1', stale.actions, now);
    assert.ok(first.some((r) => r.applied));
    const again = await applyCellAgentActions(m.runner, 'c1', stale.actions, now);
    assert.ok(
      again.every((r) => !r.applied),
      JSON.stringify(again),
    );
  });

  it('a refusal that repeats pass after pass is logged once, not every second', async () => {
    const m = twoCells();
    m.apply((v) => destroyService(v, 'web', now));
    // c1's view, but the server takes the actions as c2's: each pass is refused (`forbidden`).
    let views = 0;
    let enough: () => void = () => {};
    const fourPasses = new Promise<void>((resolve) => {
      enough = resolve;
    });
    const transport: CellAgentTransport = {
      view: async () => {
        if (++views === 4) enough();
        return JSON.parse(JSON.stringify(cellAgentView(m.view, 'c1')));
      },
      act: (actions) => applyCellAgentActions(m.runner, 'c2', actions, now),
    };
    const lines: string[] = [];
    const agent = new CellAgent({
      cellId: 'c1',
      transport,
      intervalMs: 1,
      now: () => now,
      log: (line) => lines.push(line),
    });
    // The agent's timer does not hold the process open (a cell's other work does); this test must.
    const keepAlive = setInterval(() => {}, 1_000);
    agent.start();
    await fourPasses;
    await agent.stop();
    clearInterval(keepAlive);
    const refusals = lines.filter((line) => line.includes('refused'));
    assert.ok(refusals.length > 0, 'the refusal is logged');
    assert.equal(new Set(refusals).size, refusals.length, `each refusal once: ${refusals.join(' | ')}`);
  });
});
