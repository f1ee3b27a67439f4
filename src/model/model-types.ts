import type { EntityKind, Life } from './life.js';

/** A berth cell playing Juju's machine. */
export interface CellDoc {
  readonly id: string;
  readonly life: Life;
}

/** A service; `subordinate` services (sidecars) get units only through principal units. */
export interface ServiceDoc {
  readonly name: string;
  readonly life: Life;
  readonly subordinate: boolean;
}

/** One instance index of a service; a sidecar unit names its principal and shares its cell. */
export interface UnitDoc {
  readonly name: string;
  readonly service: string;
  readonly index: number;
  readonly life: Life;
  /** The cell it is assigned to; null until assigned. Sidecars always carry their principal's. */
  readonly cell_id: string | null;
  /** The principal unit of a sidecar (seed: "subordinate units reference principal units"). */
  readonly principal: string | null;
}

/**
 * `global`: units of both services enter and leave its scope. `container`: pairs each principal
 * unit with its sidecar on the same cell; endpoints are then [principal service, sidecar service].
 */
export type RelationScope = 'global' | 'container';

export interface RelationDoc {
  readonly id: string;
  readonly endpoints: readonly [string, string];
  readonly scope: RelationScope;
  readonly life: Life;
}

export type CleanupKind =
  /** A Dying service's relations one at a time, then its Alive units Dying in bounded batches. */
  | 'service-dying'
  /** A Dying principal's Alive subordinates Dying, one at a time. */
  | 'unit-dying'
  /** A Dying container relation's Alive sidecar units Dying, one at a time. */
  | 'relation-dying'
  /** A force-destroyed unit: its scopes, its subordinates, Dead, removed; one step at a time. */
  | 'force-unit';

/** A row written beside a life change; it survives restarts and is retried until done. */
export interface CleanupJob {
  /** Deterministic (`kind:target[:backstop]`), so writing the same job twice writes it once. */
  readonly id: string;
  readonly kind: CleanupKind;
  readonly target: string;
  /** ISO-8601; the job is not run before it (the --force backstop waits max-wait). */
  readonly due_at: string;
}

export interface EntityRef {
  readonly kind: EntityKind;
  readonly id: string;
}

/** Counts a storage layer must answer inside the transaction (a SELECT COUNT or a counter). */
export type CountKind =
  | 'units-of-service'
  | 'alive-units-of-service'
  | 'relations-of-service'
  | 'alive-relations-of-service'
  | 'units-on-cell'
  | 'subordinates-of-unit'
  | 'alive-subordinates-of-unit'
  | 'scope-of-relation'
  | 'scopes-of-unit';

/** A fact the transaction was built from; the txn applies only if every one still holds. */
export type Assert =
  | { readonly kind: 'life'; readonly entity: EntityRef; readonly in: readonly Life[] }
  | { readonly kind: 'absent'; readonly entity: EntityRef }
  | {
      readonly kind: 'count';
      readonly of: CountKind;
      readonly id: string;
      readonly op: 'eq' | 'gt';
      readonly value: number;
    }
  | { readonly kind: 'in-scope'; readonly relation: string; readonly unit: string; readonly is: boolean }
  | { readonly kind: 'unit-cell'; readonly unit: string; readonly cell_id: string | null }
  /** At least one holds: Juju's "$or", used for "this is not the last reference". */
  | { readonly kind: 'any'; readonly of: readonly Assert[] };

export type Op =
  | { readonly op: 'insert-cell'; readonly cell: CellDoc }
  | { readonly op: 'insert-service'; readonly service: ServiceDoc }
  | { readonly op: 'insert-unit'; readonly unit: UnitDoc }
  | { readonly op: 'insert-relation'; readonly relation: RelationDoc }
  | { readonly op: 'set-life'; readonly entity: EntityRef; readonly to: Life }
  | { readonly op: 'remove'; readonly entity: EntityRef }
  | { readonly op: 'assign-unit'; readonly unit: string; readonly cell_id: string }
  | { readonly op: 'enter-scope'; readonly relation: string; readonly unit: string }
  | { readonly op: 'leave-scope'; readonly relation: string; readonly unit: string }
  /** Idempotent: an existing job with the same id is kept as it is. */
  | { readonly op: 'insert-cleanup'; readonly job: CleanupJob }
  /** Idempotent: removing a missing job is not an error. */
  | { readonly op: 'remove-cleanup'; readonly id: string };

/**
 * What every rule returns: the facts it read and the writes it wants, applied all or nothing by a
 * `ModelTxnRunner`. `rule` names the seed bullet for logs and errors.
 */
export interface ModelTxn {
  readonly rule: string;
  readonly asserts: readonly Assert[];
  readonly ops: readonly Op[];
}

/**
 * A read-only view of the model. Rules are pure functions of a view; the runner re-checks their
 * asserts when applying, so a view that changed underneath only costs a retry.
 */
export interface ModelView {
  cell(id: string): CellDoc | undefined;
  service(name: string): ServiceDoc | undefined;
  unit(name: string): UnitDoc | undefined;
  relation(id: string): RelationDoc | undefined;
  cleanup(id: string): CleanupJob | undefined;
  count(of: CountKind, id: string): number;
  isInScope(relation: string, unit: string): boolean;
  cells(): Iterable<CellDoc>;
  services(): Iterable<ServiceDoc>;
  relations(): Iterable<RelationDoc>;
  cleanups(): Iterable<CleanupJob>;
  /** Unit names of a service, optionally only those with the given life. */
  unitsOfService(service: string, life?: Life): Iterable<string>;
  unitsOnCell(cell: string): Iterable<string>;
  subordinatesOf(unit: string): Iterable<string>;
  relationsOfService(service: string): Iterable<string>;
  unitsInScope(relation: string): Iterable<string>;
  scopesOfUnit(unit: string): Iterable<string>;
}
