import { numbered } from '../../db/index.js';

/**
 * The statements every ActualLRP CAS and every heartbeat runs, as constant SQL (the event insert
 * is db's EventLog's).
 * Building them with the query builder cost more CPU than SQLite spent running them; constant text
 * also hits the prepared-statement cache. Written with `?` and numbered for PostgreSQL once.
 */
export const actualColumns =
  'process_guid, idx, evacuating, domain, instance_guid, cell_id, state, crash_count, last_crashed_at, ' +
  'crash_reason, since, placement_error, address, ports, tag_epoch, tag_index';
const hotSql = {
  selectActual: `SELECT ${actualColumns} FROM actual_lrps WHERE process_guid = ? AND idx = ? AND evacuating = ?`,
  updateActual:
    'UPDATE actual_lrps SET domain = ?, instance_guid = ?, cell_id = ?, state = ?, crash_count = ?, ' +
    'last_crashed_at = ?, crash_reason = ?, since = ?, placement_error = ?, address = ?, ports = ?, ' +
    'tag_epoch = ?, tag_index = ? ' +
    'WHERE process_guid = ? AND idx = ? AND evacuating = ? AND tag_epoch = ? AND tag_index = ?',
  // Every heartbeat reads its cell's presence, and most only move its expiry.
  selectCell:
    'SELECT cell_id, zone, capacity, rep_url, placement_tags, expires_at, model_agent, rep_token FROM cells WHERE cell_id = ?',
  renewCell: 'UPDATE cells SET expires_at = ? WHERE cell_id = ?',
} as const;
type HotQuery = keyof typeof hotSql;

/**
 * A DesiredLRP's domain and the `volumes` of its definition (JSON text, or null without any): what
 * every start and crash of an instance reads to pin its named volumes (volume-pins.ts), without
 * parsing the whole definition in JS. Each database reads the JSON its own way.
 */
const desiredVolumesSql = {
  sqlite:
    "SELECT domain, json_extract(definition, '$.volumes') AS volumes FROM desired_lrps WHERE process_guid = ?",
  postgres:
    "SELECT domain, (definition::jsonb -> 'volumes')::text AS volumes FROM desired_lrps WHERE process_guid = $1",
} as const;

export const hotSqlByKind: Readonly<
  Record<
    'sqlite' | 'postgres',
    Readonly<Record<HotQuery | 'selectActualForUpdate' | 'selectDesiredVolumes', string>>
  >
> = {
  sqlite: {
    ...hotSql,
    selectActualForUpdate: hotSql.selectActual,
    selectDesiredVolumes: desiredVolumesSql.sqlite,
  },
  postgres: {
    selectActual: numbered(hotSql.selectActual),
    selectActualForUpdate: `${numbered(hotSql.selectActual)} FOR UPDATE`,
    updateActual: numbered(hotSql.updateActual),
    selectCell: numbered(hotSql.selectCell),
    renewCell: numbered(hotSql.renewCell),
    selectDesiredVolumes: desiredVolumesSql.postgres,
  },
};

/** PostgreSQL texts worth a named prepared statement: parsed and planned once per connection. */
export const preparedPostgresStatements: ReadonlySet<string> = new Set(Object.values(hotSqlByKind.postgres));
