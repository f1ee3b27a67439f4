import type { ModelView, RelationScope } from './model-types.js';
import { scopePeers } from './relation-rules.js';

/** Where a unit's instance can be reached: the cell's address and its published ports. */
export interface UnitAddress {
  readonly address: string;
  /** container port → host port on `address`. */
  readonly ports: Readonly<Record<string, number>>;
}

export interface RelationPeer extends UnitAddress {
  /** The peer unit's name in the model (`shop:/db#0`). */
  readonly unit: string;
}

export interface UnitRelation {
  readonly relation: string;
  readonly scope: RelationScope;
  /** The service at the other end (`shop:/db`). */
  readonly service: string;
  /** Whether this unit has entered the relation's scope itself (it does once it is placed). */
  readonly joined: boolean;
  /** The other end's units in the scope, with a placed instance. */
  readonly peers: readonly RelationPeer[];
}

/** What one unit's container sees of its relations: written to its relations file. */
export interface UnitRelationData {
  readonly unit: string;
  readonly relations: readonly UnitRelation[];
}

/**
 * What one unit is told of its relations, as Juju's unit agents exchange settings: for each
 * relation of its service (Alive or Dying, since departing units still see their peers until they
 * leave), the units of the other end in the relation's scope, with their addresses. They are
 * listed even before this unit joins, so a container starting now knows where its peers are. A
 * container-scoped relation pairs a principal with its own sidecar only. Peers with no placed
 * instance (no address yet) are left out: they appear once they run, and vanish as they depart.
 */
export function unitRelationData(
  view: ModelView,
  unitName: string,
  addressOf: (unit: string) => UnitAddress | undefined,
): UnitRelationData {
  const unit = view.unit(unitName);
  if (unit === undefined) return { unit: unitName, relations: [] };
  const relations: UnitRelation[] = [];
  for (const id of [...view.relationsOfService(unit.service)].sort()) {
    const rel = view.relation(id);
    if (rel === undefined) continue;
    const [a, b] = rel.endpoints;
    const other = a === unit.service ? b : a;
    const peers: RelationPeer[] = [];
    for (const peer of scopePeers(view, id, unitName, false)) {
      const where = addressOf(peer);
      if (where) peers.push({ unit: peer, ...where });
    }
    const joined = view.isInScope(id, unitName);
    relations.push({ relation: id, scope: rel.scope, service: other, joined, peers });
  }
  return { unit: unitName, relations };
}

/**
 * The environment a unit's container starts with: `BERTH_RELATION_<SERVICE>` = its peers as
 * `address:port` (the first published port), comma separated, e.g. `BERTH_RELATION_DB`. Only a
 * snapshot at start: the relations file is what stays current.
 */
export function relationEnv(data: UnitRelationData): Record<string, string> {
  const env: Record<string, string> = {};
  for (const rel of data.relations) {
    const key = `BERTH_RELATION_${rel.service
      .replace(/^\/+/, '')
      .replace(/[^A-Za-z0-9]+/g, '_')
      .toUpperCase()}`;
    env[key] = rel.peers
      .map((p) => {
        const port = Object.values(p.ports)[0];
        return port === undefined ? p.address : `${p.address}:${port}`;
      })
      .join(',');
  }
  return env;
}
