import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import type { SqlBbsStore } from '../../bbs/index.js';
import { InvalidArgumentError, NotFoundError, writeFileAtomic } from '../../core/index.js';
import type { DbTables } from '../../db/index.js';
import { type Principal, type Role, roles } from './roles.js';
import type { TokenTables } from './token-tables.js';

type TokenDb = Kysely<DbTables & TokenTables>;

export interface TokenInfo {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  readonly created_at: string;
  readonly created_by: string | null;
  /** When the token stops working (ISO-8601); null: until it is revoked. */
  readonly expires_at: string | null;
}

export interface CreatedToken extends TokenInfo {
  /** The secret itself: shown once, stored only as its sha256. */
  readonly token: string;
}

/** Verifies bearer tokens; the API's auth hook needs only this. */
export interface TokenAuthenticator {
  authenticate(token: string): Promise<Principal | undefined>;
}

const tokenPrefix = 'berth_';

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * API tokens in the BBS database, so every server of one PostgreSQL accepts the same tokens. A
 * token is 32 random bytes; only its sha256 is stored (a stolen database grants nothing), and a
 * random token needs no slow hash. Lookups are cached briefly: every API call authenticates.
 */
export class TokenStore implements TokenAuthenticator {
  readonly #backend: SqlBbsStore['backend'];
  readonly #now: () => Date;
  readonly #cache = new Map<string, { principal: Principal | undefined; until: number }>();
  readonly #cacheMs: number;

  constructor(bbs: Pick<SqlBbsStore, 'backend'>, options: { now?: () => Date; cacheMs?: number } = {}) {
    this.#backend = bbs.backend;
    this.#now = options.now ?? (() => new Date());
    this.#cacheMs = options.cacheMs ?? 5_000;
  }

  /** The token table inside a BBS transaction (it shares the database, not the type). */
  #write<T>(fn: (db: TokenDb) => Promise<T>): Promise<T> {
    return this.#backend.write((tx) => fn(tx.withTables<TokenTables>()));
  }

  #read<T>(fn: (db: TokenDb) => Promise<T>): Promise<T> {
    return this.#backend.read((tx) => fn(tx.withTables<TokenTables>()));
  }

  async create(req: {
    role: Role;
    name?: string;
    created_by?: string | null;
    /** Seconds the token works for; absent: until it is revoked. */
    expires_in_s?: number;
  }): Promise<CreatedToken> {
    if (!roles.includes(req.role)) {
      throw new InvalidArgumentError(
        `Invalid role "${String(req.role)}": expected one of ${roles.join(', ')}`,
        {
          field: 'role',
        },
      );
    }
    if (req.expires_in_s !== undefined && !(Number.isInteger(req.expires_in_s) && req.expires_in_s > 0))
      throw new InvalidArgumentError(
        `Invalid expires_in_s ${String(req.expires_in_s)}: expected a whole number of seconds above 0`,
        { field: 'expires_in_s' },
      );
    const id = randomUUID();
    const now = this.#now();
    const token = `${tokenPrefix}${randomBytes(32).toString('base64url')}`;
    const info: TokenInfo = {
      id,
      name: req.name ?? `${req.role}-${id.slice(0, 8)}`,
      role: req.role,
      created_at: now.toISOString(),
      created_by: req.created_by ?? null,
      expires_at:
        req.expires_in_s === undefined
          ? null
          : new Date(now.getTime() + req.expires_in_s * 1000).toISOString(),
    };
    await this.#write((db) =>
      db
        .insertInto('api_tokens')
        .values({ ...info, token_hash: hashToken(token), revoked_at: null })
        .execute(),
    );
    return { ...info, token };
  }

  async authenticate(token: string): Promise<Principal | undefined> {
    const hash = hashToken(token);
    const cached = this.#cache.get(hash);
    const nowMs = this.#now().getTime();
    if (cached && cached.until > nowMs) return cached.principal;
    const row = await this.#read((db) =>
      db
        .selectFrom('api_tokens')
        .select(['id', 'name', 'role', 'expires_at'])
        .where('token_hash', '=', hash)
        .where('revoked_at', 'is', null)
        .executeTakeFirst(),
    );
    const expiresMs = row?.expires_at ? Date.parse(row.expires_at) : Number.POSITIVE_INFINITY;
    const live = row !== undefined && expiresMs > nowMs;
    const principal = live ? { token_id: row.id, user: row.name, role: row.role as Role } : undefined;
    if (this.#cache.size > 10_000) this.#cache.clear();
    // The cache never outlives the token: an expired token is refused from its first second on.
    this.#cache.set(hash, { principal, until: Math.min(nowMs + this.#cacheMs, expiresMs) });
    return principal;
  }

  async list(): Promise<TokenInfo[]> {
    const rows = await this.#read((db) =>
      db
        .selectFrom('api_tokens')
        .select(['id', 'name', 'role', 'created_at', 'created_by', 'expires_at'])
        .where('revoked_at', 'is', null)
        .orderBy('created_at')
        .execute(),
    );
    return rows.map((r) => ({ ...r, role: r.role as Role }));
  }

  async revoke(id: string): Promise<void> {
    const at = this.#now().toISOString();
    const result = await this.#write((db) =>
      db
        .updateTable('api_tokens')
        .set({ revoked_at: at })
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .executeTakeFirst(),
    );
    if (Number(result.numUpdatedRows) === 0) throw new NotFoundError('token', id);
    this.#cache.clear();
  }

  /**
   * First start: writes an admin token to `<dataDir>/admin.token` (mode 0600). A file whose token
   * this database still accepts is kept; otherwise (no file, or a file from another database) a
   * new admin token replaces it. Returns the token.
   */
  async ensureAdminTokenFile(dataDir: string): Promise<string> {
    const path = adminTokenPath(dataDir);
    if (existsSync(path)) {
      const existing = readFileSync(path, 'utf8').trim();
      if (existing && (await this.authenticate(existing))?.role === 'admin') return existing;
    }
    const created = await this.create({ role: 'admin', name: 'admin', created_by: null });
    writeFileAtomic(path, `${created.token}\n`, { durable: true, mode: 0o600 });
    chmodSync(path, 0o600);
    return created.token;
  }
}

export function adminTokenPath(dataDir: string): string {
  return join(dataDir, 'admin.token');
}

/** How a server authenticates: its token store, the buildApp `auth` it implies, its admin token. */
export interface TokenAuth {
  readonly tokens: TokenStore;
  /** The token store itself when auth is on, 'none' when it is off. */
  readonly auth: TokenAuthenticator | 'none';
  /** The admin token written to `<dataDir>/admin.token`, when auth is on and a dataDir was given. */
  readonly adminToken?: string;
}

/**
 * The API tokens of a server on `bbs`'s database. The store exists with auth off too (its routes
 * still answer, for an admin switching auth on later); only with auth on is a first admin token
 * written to the data dir.
 */
export async function openTokenAuth(
  bbs: Pick<SqlBbsStore, 'backend'>,
  options: { auth: 'tokens' | 'none'; dataDir?: string },
): Promise<TokenAuth> {
  const tokens = new TokenStore(bbs);
  const adminToken =
    options.auth === 'tokens' && options.dataDir !== undefined
      ? await tokens.ensureAdminTokenFile(options.dataDir)
      : undefined;
  return {
    tokens,
    auth: options.auth === 'tokens' ? tokens : 'none',
    ...(adminToken !== undefined ? { adminToken } : {}),
  };
}
