import { elementScroll, observeElementOffset, observeElementRect, Virtualizer } from '@tanstack/virtual-core';
import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { SortDirection } from '../model/table-query.js';

export interface Column<Row> {
  readonly key: keyof Row & string;
  readonly label: string;
  /** The cell's content; default: the field as text. */
  readonly render?: (row: Row) => ComponentChildren;
  readonly width?: string;
}

interface DataTableProps<Row> {
  readonly id: string;
  readonly caption: string;
  readonly rows: readonly Row[];
  readonly columns: readonly Column<Row>[];
  readonly rowKey: (row: Row) => string;
  readonly sortBy: string;
  readonly direction: SortDirection;
  readonly onSort: (key: keyof Row & string) => void;
  /** Rows drawn above and below the visible ones, so fast scrolling shows no blank rows. */
  readonly overscan?: number;
}

const rowHeight = 30;

/**
 * A table that draws only its visible rows (TanStack Virtual), so 10,000 instances cost the page
 * what 30 do. It stays a real <table>: screen readers get the column headers, and sorting is a
 * button in each header with aria-sort.
 */
export function DataTable<Row>(props: DataTableProps<Row>) {
  const scroller = useRef<HTMLDivElement>(null);
  const [, setTick] = useState(0);
  const virtualizer = useMemo(
    () =>
      new Virtualizer<HTMLDivElement, HTMLTableRowElement>({
        count: props.rows.length,
        getScrollElement: () => scroller.current,
        estimateSize: () => rowHeight,
        scrollToFn: elementScroll,
        observeElementRect,
        observeElementOffset,
        overscan: props.overscan ?? 10,
        onChange: () => setTick((n) => n + 1),
      }),
    [],
  );
  virtualizer.setOptions({ ...virtualizer.options, count: props.rows.length });
  useLayoutEffect(() => virtualizer._didMount(), [virtualizer]);
  useLayoutEffect(() => virtualizer._willUpdate());
  useEffect(() => virtualizer.measure(), [props.rows.length, virtualizer]);

  const items = virtualizer.getVirtualItems();
  const top = items[0]?.start ?? 0;
  const bottom = virtualizer.getTotalSize() - (items.at(-1)?.end ?? 0);
  const colSpan = props.columns.length;
  return (
    <div class="table-scroller" ref={scroller} id={props.id} tabIndex={-1}>
      <table class="data-table" aria-rowcount={props.rows.length + 1}>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((column) => {
              const sorted = props.sortBy === column.key;
              return (
                <th
                  key={column.key}
                  scope="col"
                  style={column.width ? { width: column.width } : undefined}
                  aria-sort={sorted ? (props.direction === 'asc' ? 'ascending' : 'descending') : 'none'}
                >
                  <button
                    type="button"
                    class="sort"
                    data-sort={column.key}
                    onClick={() => props.onSort(column.key)}
                  >
                    {column.label}
                    <span aria-hidden="true">{sorted ? (props.direction === 'asc' ? ' ▲' : ' ▼') : ''}</span>
                  </button>
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {top > 0 && (
            <tr class="spacer" style={{ height: `${top}px` }}>
              <td colSpan={colSpan} />
            </tr>
          )}
          {items.map((item) => {
            const row = props.rows[item.index] as Row;
            return (
              <tr key={props.rowKey(row)} data-key={props.rowKey(row)} style={{ height: `${rowHeight}px` }}>
                {props.columns.map((column) => (
                  <td key={column.key}>
                    {column.render ? column.render(row) : String(row[column.key] ?? '')}
                  </td>
                ))}
              </tr>
            );
          })}
          {bottom > 0 && (
            <tr class="spacer" style={{ height: `${bottom}px` }}>
              <td colSpan={colSpan} />
            </tr>
          )}
        </tbody>
      </table>
      {props.rows.length === 0 && <p class="muted empty">Nothing matches.</p>}
    </div>
  );
}
