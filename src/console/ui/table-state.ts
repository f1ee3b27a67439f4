import { useLocation } from 'preact-iso';
import { queryFromSearch, queryToSearch, type TableQuery } from '../model/table-query.js';

/**
 * A table's filter and sort kept in the page's URL (replacing the history entry as one types), so
 * a filtered view is a link of its own and the back button leaves the table as it was.
 */
export function useTableQuery<Row>(
  defaults: TableQuery<Row>,
  fields: readonly (keyof Row & string)[],
  filterable: readonly (keyof Row & string)[],
): [TableQuery<Row>, (next: TableQuery<Row>) => void] {
  const location = useLocation();
  const search = location.url.includes('?') ? location.url.slice(location.url.indexOf('?')) : '';
  const query = queryFromSearch(search, defaults, fields, filterable);
  const set = (next: TableQuery<Row>) =>
    location.route(`${location.path}${queryToSearch(next, defaults)}`, true);
  return [query, set];
}

export function toggleSort<Row>(query: TableQuery<Row>, key: keyof Row & string): TableQuery<Row> {
  if (query.sortBy === key) return { ...query, direction: query.direction === 'asc' ? 'desc' : 'asc' };
  return { ...query, sortBy: key, direction: 'asc' };
}
