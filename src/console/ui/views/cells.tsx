import { useMemo, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { type CellUse, cellUse } from '../../model/cluster-summary.js';
import { runTableQuery, type TableQuery } from '../../model/table-query.js';
import { useClusterFeed } from '../cluster-feed.js';
import { apiSend } from '../console-api.js';
import { useSession } from '../session.js';
import { TextFilter } from '../table-filters.js';
import { toggleSort, useTableQuery } from '../table-state.js';
import { Section, UsageBar } from '../widgets.js';

interface CellRow {
  readonly cell_id: string;
  readonly zone: string;
  readonly instances: number;
  readonly memory: number;
  readonly use: CellUse;
}

const defaults: TableQuery<CellRow> = { text: '', equals: {}, sortBy: 'cell_id', direction: 'asc' };

/** Every cell with its zone and its reserved share of memory, disk and containers. */
export function Cells() {
  const feed = useClusterFeed();
  const [query, setQuery] = useTableQuery(defaults, ['cell_id', 'zone', 'instances', 'memory'], ['zone']);
  const rows = useMemo(
    () =>
      runTableQuery(
        cellUse(feed.view).map((use) => ({
          cell_id: use.cell_id,
          zone: use.zone,
          instances: use.instances,
          memory: use.capacity.memory_mb > 0 ? use.used.memory_mb / use.capacity.memory_mb : 0,
          use,
        })),
        query,
        ['cell_id', 'zone'],
      ),
    [feed.view.version, query.text, query.sortBy, query.direction, query.equals.zone],
  );
  const header = (key: keyof CellRow & string, label: string) => (
    <th
      scope="col"
      aria-sort={query.sortBy === key ? (query.direction === 'asc' ? 'ascending' : 'descending') : 'none'}
    >
      <button type="button" class="sort" onClick={() => setQuery(toggleSort(query, key))}>
        {label}
      </button>
    </th>
  );
  return (
    <div class="table-page">
      <div class="toolbar">
        <TextFilter id="cell-filter" query={query} setQuery={setQuery} />
        <span class="muted">{rows.length} cells</span>
      </div>
      <div class="table-scroller">
        <table class="data-table" id="cell-table">
          <caption class="visually-hidden">Cells</caption>
          <thead>
            <tr>
              {header('cell_id', 'cell')}
              {header('zone', 'zone')}
              {header('instances', 'instances')}
              {header('memory', 'memory')}
              <th scope="col">disk</th>
              <th scope="col">containers</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.cell_id} data-cell={row.cell_id}>
                <td>
                  <a href={`/console/cells/${encodeURIComponent(row.cell_id)}`}>{row.cell_id}</a>
                </td>
                <td>{row.zone}</td>
                <td>
                  <a href={`/console/instances?cell_id=${encodeURIComponent(row.cell_id)}`}>
                    {row.instances}
                  </a>
                </td>
                <td>
                  <UsageBar
                    label={`${row.cell_id} memory`}
                    used={row.use.used.memory_mb}
                    total={row.use.capacity.memory_mb}
                    unit="MB"
                  />
                </td>
                <td>
                  <UsageBar
                    label={`${row.cell_id} disk`}
                    used={row.use.used.disk_mb}
                    total={row.use.capacity.disk_mb}
                    unit="MB"
                  />
                </td>
                <td>
                  <UsageBar
                    label={`${row.cell_id} containers`}
                    used={row.use.used.containers}
                    total={row.use.capacity.containers}
                    unit=""
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {rows.length === 0 && <p class="muted empty">No cells are up.</p>}
      </div>
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
