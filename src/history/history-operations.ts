import { Type } from '@sinclair/typebox';
import { httpOperation, Name, NameOrEmpty, type QueryOf } from '../core/index.js';
import type { ContainerLogs, ContainerPage } from './history-store.js';
import type { ContainerWithHistory } from './history-types.js';
import type { IngestRecord, IngestResult } from './ingest-records.js';
import type { Subscription, SubscriptionWithDeliveries } from './webhook-subscriptions.js';

/** A token as `POST /v1/tokens` returns it: the secret is shown this once. */
export interface CreatedToken {
  readonly id: string;
  readonly name: string;
  readonly role: string;
  readonly token: string;
  /** ISO-8601, or null for a token that works until it is revoked. */
  readonly expires_at?: string | null;
}

/** `GET /v1/containers`' filters and page; the route validates with it, clients are typed by it. */
export const ContainerListQuery = Type.Object(
  {
    status: Type.Optional(Name()),
    system: Type.Optional(Name()),
    since: Type.Optional(Name({ description: 'ISO-8601: changed at or after' })),
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,9}$' })),
    cursor: Type.Optional(NameOrEmpty({ description: 'next_cursor of the previous page' })),
  },
  { additionalProperties: false },
);

/**
 * The history API as one table: api/history-routes.ts registers each route at `op.path`, and
 * HistoryClient (cells posting batches, the CLI reading) calls the same operations.
 */
export const historyOperations = {
  listContainers: httpOperation<undefined, QueryOf<typeof ContainerListQuery>, undefined, ContainerPage>(
    'GET',
    '/v1/containers',
  ),
  getContainer: httpOperation<{ id: string }, undefined, undefined, ContainerWithHistory>(
    'GET',
    '/v1/containers/:id',
  ),
  getContainerLogs: httpOperation<{ id: string }, undefined, undefined, ContainerLogs>(
    'GET',
    '/v1/containers/:id/logs',
  ),
  ingestContainerEvents: httpOperation<
    undefined,
    undefined,
    { records: readonly IngestRecord[] },
    IngestResult
  >('POST', '/v1/containers/events'),
  recordContainerAction: httpOperation<
    { id: string },
    undefined,
    { status: string; message?: string },
    IngestResult
  >('POST', '/v1/containers/:id/actions'),
  subscribe: httpOperation<undefined, undefined, { url: string; statuses: readonly string[] }, Subscription>(
    'POST',
    '/v1/subscriptions',
  ),
  getSubscription: httpOperation<{ id: string }, undefined, undefined, SubscriptionWithDeliveries>(
    'GET',
    '/v1/subscriptions/:id',
  ),
  createToken: httpOperation<
    undefined,
    undefined,
    { role: string; name?: string; expires_in_s?: number },
    CreatedToken
  >('POST', '/v1/tokens'),
} as const;
