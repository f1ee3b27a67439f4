import { type EventFacts, eventFacts } from '../../model/event-facts.js';
import { useClusterFeed } from '../cluster-feed.js';
import { useTableQuery } from '../table-state.js';
import { StateBadge } from '../widgets.js';

const defaults = { text: '', equals: {}, sortBy: 'created_at' as const, direction: 'desc' as const };

/** The live event stream since the page opened, newest first, filterable by system, cell and status. */
export function Events() {
  const feed = useClusterFeed();
  const [query, setQuery] = useTableQuery<EventFacts>(
    defaults,
    ['created_at'],
    ['system', 'cell_id', 'state'],
  );
  const input = (field: 'system' | 'cell_id' | 'state', label: string) => (
    <label>
      {label}{' '}
      <input
        type="search"
        id={`event-${field}`}
        value={query.equals[field] ?? ''}
        onInput={(e) =>
          setQuery({ ...query, equals: { ...query.equals, [field]: (e.target as HTMLInputElement).value } })
        }
      />
    </label>
  );
  const shown = feed.events
    .map(eventFacts)
    .filter((f) =>
      (['system', 'cell_id', 'state'] as const).every((k) => !query.equals[k] || f[k] === query.equals[k]),
    )
    .slice(0, 200);
  return (
    <div class="table-page">
      <div class="toolbar">
        {input('system', 'System')}
        {input('cell_id', 'Cell')}
        {input('state', 'Status')}
        <span class="muted" aria-live="polite">
          {shown.length} shown of {feed.events.length} since this page opened
        </span>
      </div>
      <ol class="event-list" id="event-list">
        {shown.map((f) => (
          <li key={f.id} data-event={f.type}>
            <time dateTime={f.created_at}>{f.created_at.slice(11, 23)}</time>{' '}
            <span class="event-type">{f.type}</span> <strong>{f.subject}</strong>{' '}
            <StateBadge state={f.state} /> {f.cell_id ? <span class="muted">on {f.cell_id}</span> : null}
            {f.system ? <span class="muted"> · {f.system}</span> : null}
          </li>
        ))}
      </ol>
      {shown.length === 0 && (
        <p class="muted empty">No events yet: they appear here as the cluster changes.</p>
      )}
    </div>
  );
}
