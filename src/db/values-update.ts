import { CompiledQuery } from 'kysely';
import type { SqlDialectKind } from './sql-backend.js';

/** One `UPDATE … FROM (VALUES …)`: many rows, each with its own values, in one statement. */
export interface ValuesUpdate {
  readonly table: string;
  /** The VALUES table's columns, in order: each row gives a value for every one of them. */
  readonly columns: readonly string[];
  /**
   * PostgreSQL's type of each column that is not TEXT: it infers a VALUES column's type from its
   * first row, whose values are cast.
   */
  readonly types?: Readonly<Record<string, string>>;
  /** The table's columns set, each from the VALUES column of the same name. */
  readonly set: readonly string[];
  /** The row each VALUES row updates: the table's column equals the VALUES column, for each pair. */
  readonly match: readonly (readonly [tableColumn: string, valuesColumn: string])[];
}

/**
 * The statement updating `rows` (the callers keep them below both databases' bound-parameter
 * limits). SQLite names a VALUES table's columns column1, column2, …; PostgreSQL takes the names
 * in the alias.
 */
export function valuesUpdate(
  kind: SqlDialectKind,
  spec: ValuesUpdate,
  rows: readonly Readonly<Record<string, unknown>>[],
): CompiledQuery {
  const params: unknown[] = [];
  const tuples = rows.map((row, i) => {
    const marks = spec.columns.map((column) => {
      params.push(row[column]);
      if (kind !== 'postgres') return '?';
      const mark = `$${params.length}`;
      return i === 0 ? `${mark}::${spec.types?.[column] ?? 'text'}` : mark;
    });
    return `(${marks.join(', ')})`;
  });
  const col = (name: string): string =>
    kind === 'postgres' ? `v.${name}` : `v.column${spec.columns.indexOf(name) + 1}`;
  const alias = kind === 'postgres' ? `v(${spec.columns.join(', ')})` : 'v';
  const text =
    `UPDATE ${spec.table} SET ${spec.set.map((c) => `${c} = ${col(c)}`).join(', ')} ` +
    `FROM (VALUES ${tuples.join(', ')}) AS ${alias} ` +
    `WHERE ${spec.match.map(([own, value]) => `${spec.table}.${own} = ${col(value)}`).join(' AND ')}`;
  return CompiledQuery.raw(text, params);
}
