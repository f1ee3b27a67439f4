import type { Life } from './life.js';
import type { Assert, EntityRef, ModelView } from './model-types.js';

// A transaction's asserts, checked against any view: the memory model checks them before it
// applies a txn, and they read only what `ModelView` offers, so every runner means the same by them.

/** The life of the entity a reference names, or undefined when there is no such entity. */
export function entityLife(view: ModelView, entity: EntityRef): Life | undefined {
  switch (entity.kind) {
    case 'cell':
      return view.cell(entity.id)?.life;
    case 'service':
      return view.service(entity.id)?.life;
    case 'unit':
      return view.unit(entity.id)?.life;
    case 'relation':
      return view.relation(entity.id)?.life;
  }
}

/** Describes the first assert that does not hold, or returns null when all hold. */
export function failedAssert(view: ModelView, asserts: readonly Assert[]): string | null {
  for (const a of asserts) if (!holds(view, a)) return describeAssert(a);
  return null;
}

function holds(view: ModelView, a: Assert): boolean {
  switch (a.kind) {
    case 'life': {
      const life = entityLife(view, a.entity);
      return life !== undefined && a.in.includes(life);
    }
    case 'absent':
      return entityLife(view, a.entity) === undefined;
    case 'count': {
      const n = view.count(a.of, a.id);
      return a.op === 'eq' ? n === a.value : n > a.value;
    }
    case 'in-scope':
      return view.isInScope(a.relation, a.unit) === a.is;
    case 'unit-cell': {
      const unit = view.unit(a.unit);
      return unit !== undefined && unit.cell_id === a.cell_id;
    }
    case 'any':
      return a.of.some((x) => holds(view, x));
  }
}

export function describeAssert(a: Assert): string {
  switch (a.kind) {
    case 'life':
      return `${a.entity.kind} ${a.entity.id} is not ${a.in.join(' or ')}`;
    case 'absent':
      return `${a.entity.kind} ${a.entity.id} exists`;
    case 'count':
      return `${a.of} of ${a.id} is not ${a.op === 'eq' ? '' : '> '}${a.value}`;
    case 'in-scope':
      return `${a.unit} is ${a.is ? 'not ' : ''}in scope of ${a.relation}`;
    case 'unit-cell':
      return `unit ${a.unit} is not on ${a.cell_id ?? 'no cell'}`;
    case 'any':
      return `none of [${a.of.map(describeAssert).join('; ')}]`;
  }
}
