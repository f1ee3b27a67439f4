/**
 * The API token table as kysely sees it. It lives in the BBS database (created by the history tables'
 * migration, src/history/history-migrations.ts, where it first shipped) so every server of one PostgreSQL accepts the same
 * tokens; only the token store reads or writes it.
 */
// A type alias, not an interface: kysely's withTables wants an index-signature-compatible shape.
export type TokenTables = {
  api_tokens: TokenRow;
};

export interface TokenRow {
  id: string;
  name: string;
  role: string;
  token_hash: string;
  created_at: string;
  created_by: string | null;
  revoked_at: string | null;
  /** ISO-8601; NULL for a token that lasts until revoked. */
  expires_at: string | null;
}
