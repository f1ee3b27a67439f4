/**
 * One route of a berth HTTP API as data: its method and path template, with the types of its
 * path parameters, query, body and answer riding along (phantom: nothing of them exists at run
 * time). The route registers the same path (`op.path`, fastify's `:name` syntax) and a client calls
 * `client.call(op, { params, query, body })`, so neither can drift from the other: a renamed path
 * or a changed body type fails to compile on both sides. The tables are in the lowest layer both
 * the route and its clients may import (bbs/http/public-operations.ts, history/, model/).
 */
import type { Static, TSchema } from '@sinclair/typebox';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface HttpOperation<Params, Query, Body, Answer> {
  readonly method: HttpMethod;
  readonly path: string;
  /** Phantom: carries the types; always undefined. */
  readonly types?: { params: Params; query: Query; body: Body; answer: Answer };
}

/** An operation; the type arguments are what makes it typed (`undefined`: none). */
export function httpOperation<
  Params extends Record<string, string | number> | undefined = undefined,
  Query = undefined,
  Body = undefined,
  Answer = undefined,
>(method: HttpMethod, path: string): HttpOperation<Params, Query, Body, Answer> {
  return { method, path };
}

/** A body as a caller holds it: the schema's type with every array and object read-only. */
export type Sendable<T> = T extends readonly (infer U)[]
  ? readonly Sendable<U>[]
  : T extends object
    ? { readonly [K in keyof T]: Sendable<T[K]> }
    : T;

/**
 * An operation's query type from the TypeBox schema its route validates with. A URL carries every
 * value as a string; `limit`, the page size of every list route, is also taken as the number
 * callers hold it as.
 */
export type QueryOf<S extends TSchema> = {
  readonly [K in keyof Static<S>]: K extends 'limit' ? Static<S>[K] | number : Static<S>[K];
};

/** A query as a caller builds it: any key may be absent or `undefined` (left out of the URL). */
export type QueryArgs<Q> = { readonly [K in keyof Q]?: Q[K] | undefined };

/** What a call passes: exactly the parts its operation has (path params and a body required). */
export type OperationArgs<Op> =
  Op extends HttpOperation<infer P, infer Q, infer B, unknown>
    ? ([P] extends [undefined] ? { readonly params?: undefined } : { readonly params: P }) &
        ([Q] extends [undefined] ? { readonly query?: undefined } : { readonly query?: QueryArgs<Q> }) &
        ([B] extends [undefined] ? { readonly body?: undefined } : { readonly body: Sendable<B> })
    : never;

export type OperationAnswer<Op> = Op extends HttpOperation<unknown, unknown, unknown, infer A> ? A : never;

/** The path with each `:name` replaced by its parameter, URL-encoded. */
export function operationPath(
  op: HttpOperation<unknown, unknown, unknown, unknown>,
  params: Readonly<Record<string, string | number>> | undefined,
): string {
  return op.path.replace(/:([a-z_]+)/g, (_, name: string) => {
    const value = params?.[name];
    if (value === undefined) throw new Error(`${op.method} ${op.path}: no value for :${name}`);
    return encodeURIComponent(String(value));
  });
}
