import type { FastifyInstance } from 'fastify';
import type { BbsStore, TaskOutputStore } from '../bbs/index.js';
import type { SystemDeployer } from '../model/index.js';
import type { RegistryRoutesOptions } from '../registry/index.js';
import type { ApiMetrics } from './api-metrics.js';
import type { HistoryRoutesOptions } from './history-routes.js';

/** What the server's route modules are given: the stores and services they serve, and settings. */
export interface RouteDeps {
  readonly store: BbsStore;
  readonly metrics: ApiMetrics;
  /** Task completion_callback_url may name loopback/link-local addresses (src/core/callback-target.ts). */
  readonly allowPrivateCallbacks: boolean;
  readonly eventPollMs?: number;
  /** How often an open event stream checks its caller's token again (ms, default 5,000). */
  readonly eventReauthMs?: number;
  readonly onEvents?: (listener: () => void) => () => void;
  /** The newest event's id, for streams that start from now (`GET /v1/events?after=now`). */
  readonly headEventId?: () => Promise<string>;
  /** Extra facts for `/healthz` (e.g. which singletons this server holds). */
  readonly health?: () => Record<string, unknown>;
  /** The OCI registry under `/v2/` (issue 7), serving this data dir's image store. */
  readonly registry?: RegistryRoutesOptions;
  /** Systems, deploys and teardowns (src/model); absent: no /v1/systems or /v1/deploys routes. */
  readonly systems?: SystemDeployer;
  /** Container history, webhooks and API tokens (issue 6); absent: no /v1/containers routes. */
  readonly history?: HistoryRoutesOptions;
  /** Task output archives (`/v1/tasks/{guid}/outputs`); absent: no outputs routes. */
  readonly taskOutputs?: TaskOutputStore;
  /** Routes from outside the API layer (the console, tests' extras). */
  readonly plugins?: ReadonlyArray<(app: FastifyInstance) => Promise<void>>;
}

/** One room of the server's routes, registered from the one list in src/api/server-routes.ts. */
export interface RouteModule {
  readonly name: string;
  register(app: FastifyInstance, deps: RouteDeps): Promise<void>;
}

type OptionalPart = 'registry' | 'systems' | 'history' | 'taskOutputs';

/** A module served only when the server has `part` (its registry, its systems, its history). */
export function servedWith<K extends OptionalPart>(
  name: string,
  part: K,
  register: (app: FastifyInstance, value: NonNullable<RouteDeps[K]>, deps: RouteDeps) => Promise<void>,
): RouteModule {
  return {
    name,
    register: async (app, deps) => {
      const value = deps[part];
      if (value !== undefined) await register(app, value as NonNullable<RouteDeps[K]>, deps);
    },
  };
}
