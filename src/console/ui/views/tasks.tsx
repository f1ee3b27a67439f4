import { useMemo, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import type { Task } from '../../../bbs/index.js';
import { runTableQuery, type TableQuery } from '../../model/table-query.js';
import { useClusterFeed } from '../cluster-feed.js';
import { apiSend } from '../console-api.js';
import { type Column, DataTable } from '../data-table.js';
import { useSession } from '../session.js';
import { TextFilter, ValueFilter } from '../table-filters.js';
import { toggleSort, useTableQuery } from '../table-state.js';
import { Age, Section, StateBadge } from '../widgets.js';

interface TaskRow {
  readonly task_guid: string;
  readonly domain: string;
  readonly state: string;
  readonly cell_id: string;
  readonly failed: boolean;
  readonly failure_reason: string;
  readonly created_at: string;
}

const defaults: TableQuery<TaskRow> = { text: '', equals: {}, sortBy: 'created_at', direction: 'desc' };
const taskHref = (guid: string) => `/console/tasks/${encodeURIComponent(guid)}`;

export function Tasks() {
  const feed = useClusterFeed();
  const [query, setQuery] = useTableQuery(
    defaults,
    ['task_guid', 'domain', 'state', 'cell_id', 'failed', 'created_at'],
    ['state', 'cell_id', 'domain'],
  );
  const all = useMemo(
    () =>
      [...feed.view.tasks.values()].map(
        (t): TaskRow => ({
          task_guid: t.task_guid,
          domain: t.domain,
          state: t.state,
          cell_id: t.cell_id,
          failed: t.failed,
          failure_reason: t.failure_reason,
          created_at: t.created_at,
        }),
      ),
    [feed.view.version],
  );
  const rows = useMemo(
    () => runTableQuery(all, query, ['task_guid', 'domain', 'cell_id', 'failure_reason']),
    [all, JSON.stringify(query)],
  );
  const now = Date.now();
  const columns: Column<TaskRow>[] = [
    {
      key: 'task_guid',
      label: 'task',
      width: '28%',
      render: (r) => <a href={taskHref(r.task_guid)}>{r.task_guid}</a>,
    },
    { key: 'domain', label: 'domain', width: '12%' },
    {
      key: 'state',
      label: 'state',
      width: '11%',
      render: (r) => <StateBadge state={r.state === 'COMPLETED' && r.failed ? 'FAILED' : r.state} />,
    },
    { key: 'cell_id', label: 'cell', width: '12%', render: (r) => r.cell_id || '—' },
    { key: 'failed', label: 'failure', render: (r) => <span class="reason">{r.failure_reason}</span> },
    { key: 'created_at', label: 'created', width: '10%', render: (r) => <Age at={r.created_at} now={now} /> },
  ];
  return (
    <div class="table-page">
      <div class="toolbar">
        <TextFilter id="task-filter" query={query} setQuery={setQuery} />
        <ValueFilter
          id="task-state"
          label="State"
          field="state"
          values={['PENDING', 'RUNNING', 'COMPLETED', 'RESOLVING']}
          query={query}
          setQuery={setQuery}
        />
        <span class="muted">
          {rows.length} of {all.length} tasks
        </span>
      </div>
      <DataTable
        id="task-table"
        caption="Tasks"
        rows={rows}
        columns={columns}
        rowKey={(r) => r.task_guid}
        sortBy={query.sortBy}
        direction={query.direction}
        onSort={(key) => setQuery(toggleSort(query, key))}
      />
    </div>
  );
}

export function TaskDetail() {
  const { params } = useRoute();
  const guid = params.guid ?? '';
  const feed = useClusterFeed();
  const session = useSession();
  const [message, setMessage] = useState('');
  const task: Task | undefined = feed.view.tasks.get(guid);
  if (!task)
    return (
      <Section title={`task ${guid}`} id="task">
        <p class="muted">No such task.</p>
      </Section>
    );
  const cancel = async () => {
    if (!confirm(`Cancel task ${guid}?`)) return;
    try {
      await apiSend('POST', `/v1/tasks/${encodeURIComponent(guid)}/cancel`);
      setMessage('Cancelled.');
    } catch (err) {
      setMessage(err instanceof Error ? err.message : String(err));
    }
  };
  const now = Date.now();
  return (
    <Section
      title={`task ${guid}`}
      id="task"
      actions={
        session.canAct && (task.state === 'PENDING' || task.state === 'RUNNING') ? (
          <button type="button" id="cancel-task" onClick={cancel}>
            Cancel
          </button>
        ) : null
      }
    >
      <dl class="facts">
        <dt>state</dt>
        <dd>
          <StateBadge state={task.state} />{' '}
          {task.failed ? <span class="reason">failed: {task.failure_reason}</span> : null}
        </dd>
        <dt>cell</dt>
        <dd>{task.cell_id || '—'}</dd>
        <dt>image</dt>
        <dd>{task.image}</dd>
        <dt>command</dt>
        <dd>
          <code>{(task.command ?? []).join(' ') || '(image default)'}</code>
        </dd>
        <dt>created</dt>
        <dd>
          <Age at={task.created_at} now={now} />
        </dd>
        <dt>result</dt>
        <dd>
          <pre class="result">{task.result || '—'}</pre>
        </dd>
      </dl>
      {message && <p role="status">{message}</p>}
    </Section>
  );
}
