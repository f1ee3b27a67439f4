import { useMemo } from 'preact/hooks';
import { type InstanceRow, instanceRows } from '../../model/cluster-summary.js';
import { runTableQuery, type TableQuery } from '../../model/table-query.js';
import { useClusterFeed } from '../cluster-feed.js';
import { type Column, DataTable } from '../data-table.js';
import { TextFilter, ValueFilter } from '../table-filters.js';
import { toggleSort, useTableQuery } from '../table-state.js';
import { Age, StateBadge } from '../widgets.js';

const defaults: TableQuery<InstanceRow> = { text: '', equals: {}, sortBy: 'process_guid', direction: 'asc' };
const fields: (keyof InstanceRow & string)[] = [
  'process_guid',
  'index',
  'system',
  'state',
  'cell_id',
  'crash_count',
  'placement_error',
  'since',
];
const filterable: (keyof InstanceRow & string)[] = ['state', 'cell_id', 'system'];
const searched: (keyof InstanceRow & string)[] = [
  'process_guid',
  'system',
  'cell_id',
  'state',
  'placement_error',
  'crash_reason',
];

export function instanceHref(row: { process_guid: string; index: number }): string {
  return `/console/instances/${encodeURIComponent(row.process_guid)}/${row.index}`;
}

/** Every ActualLRP of the cluster: filter, sort, follow a row to its page. */
export function Instances() {
  const feed = useClusterFeed();
  const [query, setQuery] = useTableQuery(defaults, fields, filterable);
  const all = useMemo(() => instanceRows(feed.view), [feed.view.version]);
  const rows = useMemo(
    () => runTableQuery(all, query, searched),
    [all, query.text, query.sortBy, query.direction, JSON.stringify(query.equals)],
  );
  const now = Date.now();
  const columns: Column<InstanceRow>[] = [
    {
      key: 'process_guid',
      label: 'LRP',
      width: '26%',
      render: (r) => <a href={instanceHref(r)}>{r.process_guid}</a>,
    },
    { key: 'index', label: '#', width: '5%' },
    {
      key: 'system',
      label: 'system',
      width: '10%',
      render: (r) =>
        r.system ? <a href={`/console/systems/${encodeURIComponent(r.system)}`}>{r.system}</a> : '—',
    },
    {
      key: 'state',
      label: 'state',
      width: '11%',
      render: (r) => (
        <>
          <StateBadge state={r.state} />
          {r.evacuating ? <span class="muted"> evacuating</span> : null}
        </>
      ),
    },
    {
      key: 'cell_id',
      label: 'cell',
      width: '12%',
      render: (r) =>
        r.cell_id ? <a href={`/console/cells/${encodeURIComponent(r.cell_id)}`}>{r.cell_id}</a> : '—',
    },
    { key: 'crash_count', label: 'crashes', width: '8%' },
    {
      key: 'placement_error',
      label: 'placement error / crash',
      render: (r) => <span class="reason">{r.placement_error || r.crash_reason}</span>,
    },
    { key: 'since', label: 'since', width: '9%', render: (r) => <Age at={r.since} now={now} /> },
  ];
  const states = ['UNCLAIMED', 'CLAIMED', 'RUNNING', 'CRASHED'];
  return (
    <div class="table-page">
      <div class="toolbar">
        <TextFilter
          id="instance-filter"
          query={query}
          setQuery={setQuery}
          placeholder="LRP, system, cell, reason…"
        />
        <ValueFilter
          id="instance-state"
          label="State"
          field="state"
          values={states}
          query={query}
          setQuery={setQuery}
        />
        {query.equals.cell_id ? (
          <span class="chip">
            cell {query.equals.cell_id}{' '}
            <a href="/console/instances" aria-label="clear the cell filter">
              ×
            </a>
          </span>
        ) : null}
        <span class="muted" id="instance-count" aria-live="polite">
          {rows.length} of {all.length} instances
        </span>
      </div>
      <DataTable
        id="instance-table"
        caption="Instances"
        rows={rows}
        columns={columns}
        rowKey={(r) => r.key}
        sortBy={query.sortBy}
        direction={query.direction}
        onSort={(key) => setQuery(toggleSort(query, key))}
      />
    </div>
  );
}
