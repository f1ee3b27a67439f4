import type { FastifyInstance } from 'fastify';
import type { SqlBbsStore } from '../bbs/index.js';
import { HistoryStore, type HistoryStoreOptions, WebhookSubscriptions } from '../history/index.js';
import type { AppAuth } from './auth/auth-hook.js';
import { openTokenAuth, type TokenStore } from './auth/token-store.js';
import { registerHistoryRoutes } from './history-routes.js';
import type { Singleton } from './singleton-lease.js';

/** Container history and its webhooks on the BBS database, and the singleton that delivers them. */
export interface HistoryParts {
  readonly history: HistoryStore;
  readonly webhooks: WebhookSubscriptions;
  /** Webhook delivery, in one server of the cluster. */
  readonly singleton: Singleton;
}

export async function openHistory(
  store: SqlBbsStore,
  options: {
    history?: HistoryStoreOptions;
    /** Webhooks may target loopback and link-local addresses (src/core/callback-target.ts). */
    allowPrivateCallbacks?: boolean;
  } = {},
): Promise<HistoryParts> {
  let webhooks: WebhookSubscriptions | undefined;
  const history = await HistoryStore.open(store.database, {
    ...options.history,
    onRecorded: () => webhooks?.wake(),
  });
  const hooks = new WebhookSubscriptions(history, {
    allowPrivateTargets: options.allowPrivateCallbacks === true,
  });
  webhooks = hooks;
  return {
    history,
    webhooks: hooks,
    singleton: { name: 'history-webhooks', run: ({ signal }) => hooks.run({ signal }) },
  };
}

/**
 * Everything issue 6 adds (history, webhooks, API tokens) as one bundle, for tests and benchmarks
 * that build an app by hand: `buildApp({ store, auth: parts.auth, plugins: [parts.plugin] })`.
 * `berth server` composes the same parts in src/api/berth-server.ts.
 */
export interface HistoryServerParts extends HistoryParts {
  readonly tokens: TokenStore;
  /** For buildApp's `auth`. */
  readonly auth: AppAuth;
  readonly plugin: (app: FastifyInstance) => Promise<void>;
  /** The admin token written to `<dataDir>/admin.token`, when auth is on and a dataDir was given. */
  readonly adminToken?: string;
}

export async function createHistoryServerParts(
  store: SqlBbsStore,
  options: {
    auth: 'tokens' | 'none';
    dataDir?: string;
    history?: HistoryStoreOptions;
    allowPrivateCallbacks?: boolean;
  } = { auth: 'tokens' },
): Promise<HistoryServerParts> {
  const parts = await openHistory(store, options);
  const { tokens, auth, adminToken } = await openTokenAuth(store, options);
  return {
    ...parts,
    tokens,
    auth,
    plugin: (app) => registerHistoryRoutes(app, { history: parts.history, webhooks: parts.webhooks, tokens }),
    ...(adminToken !== undefined ? { adminToken } : {}),
  };
}
