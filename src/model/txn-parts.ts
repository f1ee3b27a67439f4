import type { EntityKind, Life } from './life.js';
import type { Assert, CountKind, EntityRef, ModelTxn, Op } from './model-types.js';

/** A fragment of a transaction; rules compose fragments (a removal may imply another removal). */
export interface TxnPart {
  readonly asserts: readonly Assert[];
  readonly ops: readonly Op[];
}

export function ref(kind: EntityKind, id: string): EntityRef {
  return { kind, id };
}

export function lifeIn(kind: EntityKind, id: string, ...lives: readonly Life[]): Assert {
  return { kind: 'life', entity: ref(kind, id), in: lives };
}

export function absent(kind: EntityKind, id: string): Assert {
  return { kind: 'absent', entity: ref(kind, id) };
}

export function countEq(of: CountKind, id: string, value: number): Assert {
  return { kind: 'count', of, id, op: 'eq', value };
}

export function countGt(of: CountKind, id: string, value: number): Assert {
  return { kind: 'count', of, id, op: 'gt', value };
}

export function anyOf(...of: readonly Assert[]): Assert {
  return { kind: 'any', of };
}

export function setLife(kind: EntityKind, id: string, to: Life): Op {
  return { op: 'set-life', entity: ref(kind, id), to };
}

export function removeOp(kind: EntityKind, id: string): Op {
  return { op: 'remove', entity: ref(kind, id) };
}

export function part(asserts: readonly Assert[], ops: readonly Op[]): TxnPart {
  return { asserts, ops };
}

export function txn(rule: string, ...parts: readonly TxnPart[]): ModelTxn {
  return { rule, asserts: parts.flatMap((p) => p.asserts), ops: parts.flatMap((p) => p.ops) };
}

export function first<T>(items: Iterable<T>): T | undefined {
  for (const item of items) return item;
  return undefined;
}

export function take<T>(items: Iterable<T>, limit: number): T[] {
  const out: T[] = [];
  if (limit <= 0) return out;
  for (const item of items) {
    out.push(item);
    if (out.length >= limit) break;
  }
  return out;
}

// The rules build unit names here; the one spelling lives with every other name.
export { unitName } from './instance-names.js';

/** One relation per pair of services: the id is the sorted pair, like Juju's relation key. */
export function relationId(a: string, b: string): string {
  return a < b ? `${a} ${b}` : `${b} ${a}`;
}

/** A relation id's two service names, sorted (the inverse of `relationId`). */
export function relationEndpoints(id: string): readonly [string, string] {
  const space = id.indexOf(' ');
  return [id.slice(0, space), id.slice(space + 1)];
}

export function cleanupId(kind: string, target: string, backstop = false): string {
  return `${kind}:${target}${backstop ? ':backstop' : ''}`;
}

export function combine(...parts: readonly TxnPart[]): TxnPart {
  return part(
    parts.flatMap((p) => p.asserts),
    parts.flatMap((p) => p.ops),
  );
}
