import type { TableQuery } from '../model/table-query.js';

/** The free-text filter of a table's toolbar, bound to its query (and so to the URL). */
export function TextFilter<Row>(props: {
  readonly id: string;
  readonly query: TableQuery<Row>;
  readonly setQuery: (next: TableQuery<Row>) => void;
  readonly placeholder?: string;
}) {
  return (
    <label>
      Filter{' '}
      <input
        id={props.id}
        type="search"
        value={props.query.text}
        {...(props.placeholder ? { placeholder: props.placeholder } : {})}
        onInput={(e) => props.setQuery({ ...props.query, text: (e.target as HTMLInputElement).value })}
      />
    </label>
  );
}

/** An exact-value filter of one field ('' is "any"), as a select of the values it may take. */
export function ValueFilter<Row>(props: {
  readonly id: string;
  readonly label: string;
  readonly field: keyof Row & string;
  readonly values: readonly string[];
  readonly query: TableQuery<Row>;
  readonly setQuery: (next: TableQuery<Row>) => void;
}) {
  const { query, field } = props;
  return (
    <label>
      {props.label}{' '}
      <select
        id={props.id}
        value={query.equals[field] ?? ''}
        onChange={(e) =>
          props.setQuery({
            ...query,
            equals: { ...query.equals, [field]: (e.target as HTMLSelectElement).value },
          })
        }
      >
        {['', ...props.values].map((value) => (
          <option key={value} value={value}>
            {value === '' ? 'any' : value}
          </option>
        ))}
      </select>
    </label>
  );
}
