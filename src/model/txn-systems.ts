import { systemsOfModelName } from './instance-names.js';
import type { Op } from './model-types.js';

/** The model names an op writes, by op: a new op kind without a case fails to compile. */
const namesOf: { readonly [K in Op['op']]: (op: Extract<Op, { op: K }>) => readonly string[] } = {
  'insert-cell': () => [],
  'insert-service': (op) => [op.service.name],
  'insert-unit': (op) => [op.unit.name],
  'insert-relation': (op) => [op.relation.id],
  'set-life': (op) => [op.entity.id],
  remove: (op) => [op.entity.id],
  'assign-unit': (op) => [op.unit],
  'enter-scope': (op) => [op.relation, op.unit],
  'leave-scope': (op) => [op.relation, op.unit],
  'insert-cleanup': (op) => [op.job.target],
  'remove-cleanup': () => [],
};

/** The systems a transaction's ops change (for their `system_changed` events), sorted. */
export function systemsChangedBy(ops: readonly Op[]): string[] {
  const systems = new Set<string>();
  for (const op of ops) {
    const names = (namesOf[op.op] as (op: Op) => readonly string[])(op);
    for (const name of names) for (const system of systemsOfModelName(name)) systems.add(system);
  }
  return [...systems].sort();
}
