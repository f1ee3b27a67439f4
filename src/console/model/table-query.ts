/**
 * Filtering and sorting of the console's tables, kept apart from rendering so that a filter over
 * 10,000 rows is one pass of plain code the tests can run, and the page only draws what is visible.
 */
export type SortDirection = 'asc' | 'desc';

export interface TableQuery<Row> {
  /** Words that must each appear in one of the row's searched fields (case-insensitive). */
  readonly text: string;
  /** Exact values a field must have ('' or absent: any). */
  readonly equals: Partial<Record<keyof Row & string, string>>;
  readonly sortBy: keyof Row & string;
  readonly direction: SortDirection;
}

export function runTableQuery<Row extends object>(
  rows: readonly Row[],
  query: TableQuery<Row>,
  searched: readonly (keyof Row & string)[],
): Row[] {
  const words = query.text.toLowerCase().split(/\s+/).filter(Boolean);
  const equals = Object.entries(query.equals).filter(([, value]) => value !== undefined && value !== '') as [
    keyof Row & string,
    string,
  ][];
  const kept = rows.filter((row) => {
    for (const [field, value] of equals) if (String(row[field]) !== value) return false;
    if (words.length === 0) return true;
    const haystack = searched.map((field) => String(row[field]).toLowerCase()).join('\u0000');
    return words.every((word) => haystack.includes(word));
  });
  const sign = query.direction === 'asc' ? 1 : -1;
  const field = query.sortBy;
  return kept.sort((a, b) => sign * compareValues(a[field], b[field]));
}

/** Numbers by value, everything else as text with digits compared as numbers (web-10 after web-9). */
export function compareValues(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return collator.compare(String(a ?? ''), String(b ?? ''));
}

const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });

/** A query as a URL's search parameters and back, so each filtered view has a link of its own. */
export function queryToSearch<Row>(query: TableQuery<Row>, defaults: TableQuery<Row>): string {
  const params = new URLSearchParams();
  if (query.text !== '') params.set('q', query.text);
  for (const [field, value] of Object.entries(query.equals))
    if (typeof value === 'string' && value !== '') params.set(field, value);
  if (query.sortBy !== defaults.sortBy) params.set('sort', query.sortBy);
  if (query.direction !== defaults.direction) params.set('dir', query.direction);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

export function queryFromSearch<Row>(
  search: string,
  defaults: TableQuery<Row>,
  fields: readonly (keyof Row & string)[],
  filterable: readonly (keyof Row & string)[],
): TableQuery<Row> {
  const params = new URLSearchParams(search);
  const sort = params.get('sort');
  const dir = params.get('dir');
  const equals: Partial<Record<keyof Row & string, string>> = {};
  for (const field of filterable) {
    const value = params.get(field);
    if (value !== null && value !== '') equals[field] = value;
  }
  return {
    text: params.get('q') ?? defaults.text,
    equals,
    sortBy:
      sort !== null && (fields as readonly string[]).includes(sort)
        ? (sort as keyof Row & string)
        : defaults.sortBy,
    direction: dir === 'asc' || dir === 'desc' ? dir : defaults.direction,
  };
}
