import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ModelBuilder } from '../testing/model-builder.js';
import { relationEnv, type UnitAddress, unitRelationData } from './relation-data.js';
import { destroyRelation } from './relation-rules.js';
import { relationId, unitName } from './txn-parts.js';

const at = (n: number): UnitAddress => ({ address: `10.0.0.${n}`, ports: { '5432': 61000 + n } });
const web0 = unitName('web', 0);
const db0 = unitName('db', 0);
const db1 = unitName('db', 1);

function model(): ModelBuilder {
  return new ModelBuilder()
    .cell('c1')
    .cell('c2')
    .service('web')
    .service('db')
    .service('log', true)
    .units('web', 2, ['c1', 'c2'])
    .units('db', 2, ['c1', 'c2'])
    .relate('web', 'db')
    .relate('web', 'log', 'container')
    .sidecar(web0, 'log');
}

describe('relation data delivered to containers', () => {
  it('lists the other end’s units in scope with their addresses; not the unit’s own service', () => {
    const b = model().enter('web', 'db', web0).enter('web', 'db', db0).enter('web', 'db', unitName('web', 1));
    const addresses = new Map([
      [db0, at(1)],
      [db1, at(2)],
    ]);
    const data = unitRelationData(b.view, web0, (u) => addresses.get(u));
    const db = data.relations.find((r) => r.service === 'db');
    assert.equal(db?.joined, true);
    assert.deepEqual(db?.peers, [{ unit: db0, ...at(1) }], 'db#1 is not in scope yet, web#1 is its own side');
    b.enter('web', 'db', db1);
    const again = unitRelationData(b.view, web0, (u) => addresses.get(u));
    assert.deepEqual(
      again.relations.find((r) => r.service === 'db')?.peers.map((p) => p.unit),
      [db0, db1],
      'a unit entering scope joins the file',
    );
  });

  it('a unit not yet in scope (a container starting now) still learns its peers, marked not joined', () => {
    const b = model().enter('web', 'db', db0);
    const data = unitRelationData(b.view, web0, () => at(3));
    const db = data.relations.find((r) => r.service === 'db');
    assert.equal(db?.joined, false);
    assert.deepEqual(
      db?.peers.map((p) => p.unit),
      [db0],
    );
  });

  it('peers without a placed instance are left out until they run', () => {
    const b = model().enter('web', 'db', web0).enter('web', 'db', db0).enter('web', 'db', db1);
    const data = unitRelationData(b.view, web0, (u) => (u === db1 ? at(2) : undefined));
    assert.deepEqual(
      data.relations.find((r) => r.service === 'db')?.peers.map((p) => p.unit),
      [db1],
    );
  });

  it('a container relation pairs a principal with its own sidecar only', () => {
    const b = model().sidecar(unitName('web', 1), 'log');
    b.enter('web', 'log', web0).enter('web', 'log', unitName('log', 0));
    b.enter('web', 'log', unitName('web', 1)).enter('web', 'log', unitName('log', 1));
    const principal = unitRelationData(b.view, web0, () => at(4));
    assert.deepEqual(
      principal.relations.find((r) => r.service === 'log')?.peers.map((p) => p.unit),
      [unitName('log', 0)],
    );
    const sidecar = unitRelationData(b.view, unitName('log', 1), () => at(4));
    assert.deepEqual(
      sidecar.relations.find((r) => r.service === 'web')?.peers.map((p) => p.unit),
      [unitName('web', 1)],
    );
  });

  it('a Dying relation still lists peers until they leave scope; an unknown unit has no relations', () => {
    const b = model().enter('web', 'db', web0).enter('web', 'db', db0);
    b.apply((v) => destroyRelation(v, relationId('web', 'db'), new Date()));
    const data = unitRelationData(b.view, web0, () => at(5));
    assert.deepEqual(
      data.relations.find((r) => r.service === 'db')?.peers.map((p) => p.unit),
      [db0],
    );
    assert.deepEqual(
      unitRelationData(b.view, 'nope#0', () => at(5)),
      { unit: 'nope#0', relations: [] },
    );
  });

  it('env: BERTH_RELATION_<SERVICE> = address:first port, comma separated; empty when no peer', () => {
    const env = relationEnv({
      unit: '/web#0',
      relations: [
        {
          relation: '/db /web',
          scope: 'global',
          service: '/db/primary-store',
          joined: true,
          peers: [
            { unit: '/db/primary-store#0', ...at(1) },
            { unit: '/db/primary-store#1', address: '10.0.0.2', ports: {} },
          ],
        },
        { relation: '/log /web', scope: 'container', service: '/log', joined: false, peers: [] },
      ],
    });
    assert.deepEqual(env, {
      BERTH_RELATION_DB_PRIMARY_STORE: '10.0.0.1:61001,10.0.0.2',
      BERTH_RELATION_LOG: '',
    });
  });
});
