import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { InvalidArgumentError } from '../core/index.js';
import { type EntityActionKind, isEntityActionKind } from './entity-action-kinds.js';
import { type LockRequest, planLocks } from './lock-table.js';

/**
 * Seed 003's per-entity operations as berth's users ask for them (`berth unit destroy`, …). Each is
 * an action of the action table (accepted with its lock rows, run and resumed by the action runner),
 * so one that waits for agents survives a server crash. Paths are service paths inside `system`.
 */
export type EntityRequest = (
  | { readonly kind: 'unit-destroy'; readonly path: string; readonly index: number; readonly force: boolean }
  | { readonly kind: 'service-scale'; readonly path: string; readonly instances: number }
  | { readonly kind: 'service-destroy'; readonly path: string; readonly force: boolean }
  | { readonly kind: 'relation-add'; readonly a: string; readonly b: string }
  | { readonly kind: 'relation-remove'; readonly a: string; readonly b: string }
  | { readonly kind: 'cell-destroy'; readonly cell: string; readonly force: boolean }
) & { readonly kind: EntityActionKind };

/** What an entity action stores beside its row: the request and who asked (the history names them). */
export interface StoredEntityRequest {
  readonly request: EntityRequest;
  readonly user: string;
}

/** A teardown's own parameters (`berth teardown SYSTEM --force`), stored the same way. */
export interface StoredTeardownParams {
  readonly force: boolean;
  readonly user: string;
}

const Stored = Type.Object({
  request: Type.Object({ kind: Type.String() }, { additionalProperties: true }),
  user: Type.String(),
});
const StoredTeardown = Type.Object({ force: Type.Boolean(), user: Type.String() });

/** The stored request of an entity action; null when the row holds none berth wrote. */
export function parseStoredEntityRequest(text: string): StoredEntityRequest | null {
  const value = parseJsonOrNull(text);
  if (!Value.Check(Stored, value) || !isEntityActionKind(value.request.kind)) return null;
  return value as unknown as StoredEntityRequest;
}

/** A teardown's stored parameters; a teardown accepted without any (an older berth) is not forced. */
export function parseTeardownParams(text: string): StoredTeardownParams {
  const value = parseJsonOrNull(text);
  return Value.Check(StoredTeardown, value) ? value : { force: false, user: 'anonymous' };
}

function parseJsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // catch-all: a row berth did not write reads as having no parameters; callers say so.
    return null;
  }
}

/** The service paths an operation changes (a cell's are found in the model when it is accepted). */
export function requestPaths(request: EntityRequest): string[] {
  switch (request.kind) {
    case 'unit-destroy':
    case 'service-scale':
    case 'service-destroy':
      return [request.path];
    case 'relation-add':
    case 'relation-remove':
      return [request.a, request.b];
    case 'cell-destroy':
      return [];
  }
}

/**
 * The intention locks of the paths an operation changes, as a deploy of each path would take them
 * (seed 004: IX on every ancestor, X on the path itself); where two paths meet, X wins. So a unit
 * or service operation on /web is refused at once while a deploy of /, /web or /web/x runs.
 */
export function entityLocks(paths: readonly string[]): LockRequest[] {
  const modes = new Map<string, LockRequest['mode']>();
  for (const path of paths) {
    for (const lock of planLocks({ kind: 'deploy', path })) {
      if (modes.get(lock.path) !== 'X') modes.set(lock.path, lock.mode);
    }
  }
  return [...modes].map(([path, mode]) => ({ path, mode }));
}

/** The action row's `path`: what `GET /v1/deploys/{id}` and a lock holder's message show. */
export function requestLabel(request: EntityRequest): string {
  switch (request.kind) {
    case 'unit-destroy':
      return `${request.path}/${request.index}`;
    case 'service-scale':
    case 'service-destroy':
      return request.path;
    case 'relation-add':
    case 'relation-remove':
      return `${request.a} ${request.b}`;
    case 'cell-destroy':
      return request.cell;
  }
}

/** Refuses a request that names no service of a system (`/` is the system itself). */
export function checkServicePaths(request: EntityRequest): void {
  for (const path of requestPaths(request)) {
    if (path === '/')
      throw new InvalidArgumentError(`Cannot ${request.kind} /: name a service path like /web`, { path });
  }
  if ((request.kind === 'relation-add' || request.kind === 'relation-remove') && request.a === request.b)
    throw new InvalidArgumentError(`Cannot relate ${request.a} to itself`, { path: request.a });
}
