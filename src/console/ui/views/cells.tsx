import { useMemo, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { type CellUse, cellUse } from '../../model/cluster-summary.js';
import { runTableQuery, type TableQuery } from '../../model/table-query.js';
import { useClusterFeed } from '../cluster-feed.js';
import { apiSend } from '../console-api.js';
import { type Column, DataTable } from '../data-table.js';
import { useSession } from '../session.js';
import { TextFilter } from '../table-filters.js';
import { toggleSort, useTableQuery } from '../table-state.js';
import { Section, UsageBar } from '../widgets.js';

interface CellRow {
  readonly cell_id: string;
  readonly zone: string;
  readonly instances: number;
  /** Shares of capacity reserved, 0–1: the sort keys of the meters. */
  readonly memory: number;
  readonly disk: number;
  readonly containers: number;
  readonly use: CellUse;
}

const defaults: TableQuery<CellRow> = { text: '', equals: {}, sortBy: 'cell_id', direction: 'asc' };

const share = (used: number, total: number) => (total > 0 ? used / total : 0);

const columns: readonly Column<CellRow>[] = [
  {
    key: 'cell_id',
    label: 'cell',
    width: '18%',
    render: (r) => <a href={`/console/cells/${encodeURIComponent(r.cell_id)}`}>{r.cell_id}</a>,
  },
  { key: 'zone', label: 'zone', width: '10%' },
  {
    key: 'instances',
    label: 'instances',
    width: '10%',
    render: (r) => <a href={`/console/instances?cell_id=${encodeURIComponent(r.cell_id)}`}>{r.instances}</a>,
  },
  {
    key: 'memory',
    label: 'memory',
    render: (r) => (
      <UsageBar
        label={`${r.cell_id} memory`}
        used={r.use.used.memory_mb}
        total={r.use.capacity.memory_mb}
        unit="MB"
      />
    ),
  },
  {
    key: 'disk',
    label: 'disk',
    render: (r) => (
      <UsageBar
        label={`${r.cell_id} disk`}
        used={r.use.used.disk_mb}
        total={r.use.capacity.disk_mb}
        unit="MB"
      />
    ),
  },
  {
    key: 'containers',
    label: 'containers',
    render: (r) => (
      <UsageBar
        label={`${r.cell_id} containers`}
        used={r.use.used.containers}
        total={r.use.capacity.containers}
        unit=""
      />
    ),
  },
];

/** Every cell with its zone and its reserved share of memory, disk and containers (drawn virtually). */
export function Cells() {
  const feed = useClusterFeed();
  const [query, setQuery] = useTableQuery(
    defaults,
    ['cell_id', 'zone', 'instances', 'memory', 'disk', 'containers'],
    ['zone'],
  );
  const rows = useMemo(
    () =>
      runTableQuery(
        cellUse(feed.view).map((use) => ({
          cell_id: use.cell_id,
          zone: use.zone,
          instances: use.instances,
          memory: share(use.used.memory_mb, use.capacity.memory_mb),
          disk: share(use.used.disk_mb, use.capacity.disk_mb),
          containers: share(use.used.containers, use.capacity.containers),
          use,
        })),
        query,
        ['cell_id', 'zone'],
      ),
    [feed.view.version, query.text, query.sortBy, query.direction, query.equals.zone],
  );
  return (
    <div class="table-page">
      <div class="toolbar">
        <TextFilter id="cell-filter" query={query} setQuery={setQuery} />
        <span class="muted" id="cell-count">
          {rows.length} cells
        </span>
      </div>
      <DataTable
        id="cell-table"
        caption="Cells"
        rows={rows}
        columns={columns}
        rowKey={(r) => r.cell_id}
        sortBy={query.sortBy}
        direction={query.direction}
        onSort={(key) => setQuery(toggleSort(query, key))}
      />
    </div>
  );
}

/** One cell: its use, its instances, and (operators) drain and destroy. */
export function CellDetail() {
  const { params } = useRoute();
  const cellId = params.id ?? '';
  const feed = useClusterFeed();
  const session = useSession();
  const [message, setMessage] = useState('');
  /** A plain destroy was refused (units on the cell): offer the forced one. */
  const [refused, setRefused] = useState(false);
  const use = cellUse(feed.view).find((c) => c.cell_id === cellId);
  if (!use)
    return (
      <Section title={`cell ${cellId}`} id="cell">
        <p class="muted">This cell is not up.</p>
      </Section>
    );
  const destroy = async (force: boolean) => {
    const question = force
      ? `Force cell ${cellId} out of the model? Its units are forced off and its agent is not waited for.`
      : `Destroy cell ${cellId}? It goes Dying, and Dead once its agent has stopped; refused while units are on it.`;
    if (!confirm(question)) return;
    try {
      const action = await apiSend<{ id: string }>(
        'POST',
        `/v1/model/cells/${encodeURIComponent(cellId)}/destroy`,
        force ? { force: true } : {},
      );
      setRefused(false);
      setMessage(`Destroy cell ${cellId}: accepted (action ${action.id}).`);
    } catch (err) {
      setRefused(!force);
      setMessage(`Destroy cell ${cellId}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  const drain = async () => {
    if (!confirm(`Drain cell ${cellId}? Its instances move to other cells and it stops taking work.`)) return;
    try {
      await apiSend('POST', `/v1/cells/${encodeURIComponent(cellId)}/evacuate`);
      setMessage(`Cell ${cellId} is draining.`);
    } catch (err) {
      setMessage(err instanceof Error ? err.message : String(err));
    }
  };
  return (
    <Section
      title={`cell ${cellId}`}
      id="cell"
      actions={
        session.canAct ? (
          <span class="actions">
            <button type="button" id="drain-cell" onClick={drain}>
              Drain
            </button>
            <button type="button" class="danger" id="destroy-cell" onClick={() => void destroy(false)}>
              Destroy…
            </button>
            {refused ? (
              <button type="button" class="danger" id="force-destroy-cell" onClick={() => void destroy(true)}>
                Force destroy…
              </button>
            ) : null}
          </span>
        ) : null
      }
    >
      <dl class="facts">
        <dt>zone</dt>
        <dd>{use.zone}</dd>
        <dt>memory</dt>
        <dd>
          <UsageBar label="memory" used={use.used.memory_mb} total={use.capacity.memory_mb} unit="MB" />
        </dd>
        <dt>disk</dt>
        <dd>
          <UsageBar label="disk" used={use.used.disk_mb} total={use.capacity.disk_mb} unit="MB" />
        </dd>
        <dt>containers</dt>
        <dd>
          <UsageBar label="containers" used={use.used.containers} total={use.capacity.containers} unit="" />
        </dd>
        <dt>instances</dt>
        <dd>
          <a href={`/console/instances?cell_id=${encodeURIComponent(cellId)}`}>
            {use.instances} instances on this cell →
          </a>
        </dd>
      </dl>
      {message && (
        <p role="status" id="cell-message">
          {message}
        </p>
      )}
    </Section>
  );
}
