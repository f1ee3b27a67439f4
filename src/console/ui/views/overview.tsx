import type { SystemSummary } from '../../../model/index.js';
import { clusterCounts, latestFailures } from '../../model/cluster-summary.js';
import { useClusterFeed } from '../cluster-feed.js';
import { apiGet } from '../console-api.js';
import { useResource } from '../use-resource.js';
import { Age, Section, Stat, StateBadge, UsageBar } from '../widgets.js';

export function Overview() {
  const feed = useClusterFeed();
  const counts = clusterCounts(feed.view);
  const failures = latestFailures(feed.view, 10);
  const systems = useResource(
    () => apiGet<{ systems: SystemSummary[] }>('/v1/systems?limit=1000'),
    'systems',
    feed.view.version + feed.modelVersion,
    2000,
  );
  const now = Date.now();
  const bySystemState = new Map<string, number>();
  if (systems.kind === 'ready')
    for (const s of systems.value.systems) bySystemState.set(s.state, (bySystemState.get(s.state) ?? 0) + 1);
  return (
    <div class="overview">
      <Section title="Cluster" id="cluster">
        <div class="stats">
          <Stat label="cells up" value={counts.cells} href="/console/cells" />
          <Stat label="LRPs" value={counts.desired_lrps} href="/console/instances" />
          <Stat
            label="running"
            value={counts.instances.RUNNING}
            href="/console/instances?state=RUNNING"
            tone="good"
          />
          <Stat
            label="starting"
            value={counts.instances.CLAIMED}
            href="/console/instances?state=CLAIMED"
            tone="warn"
          />
          <Stat
            label="unplaced"
            value={counts.instances.UNCLAIMED}
            href="/console/instances?state=UNCLAIMED"
            tone="warn"
          />
          <Stat
            label="crashed"
            value={counts.instances.CRASHED}
            href="/console/instances?state=CRASHED"
            tone="bad"
          />
          <Stat label="tasks running" value={counts.tasks.RUNNING} href="/console/tasks?state=RUNNING" />
          <Stat label="tasks pending" value={counts.tasks.PENDING} href="/console/tasks?state=PENDING" />
        </div>
        <div class="capacity">
          <UsageBar
            label="memory reserved"
            used={counts.used.memory_mb}
            total={counts.capacity.memory_mb}
            unit="MB"
            labelled
          />
          <UsageBar
            label="disk reserved"
            used={counts.used.disk_mb}
            total={counts.capacity.disk_mb}
            unit="MB"
            labelled
          />
          <UsageBar
            label="containers"
            used={counts.used.containers}
            total={counts.capacity.containers}
            unit=""
            labelled
          />
        </div>
      </Section>
      <Section title="Systems" id="system-states">
        {systems.kind === 'ready' ? (
          systems.value.systems.length === 0 ? (
            <p class="muted">No systems yet.</p>
          ) : (
            <ul class="inline-list">
              {[...bySystemState].sort().map(([state, n]) => (
                <li key={state}>
                  <StateBadge state={state} /> {n}
                </li>
              ))}
              <li>
                <a href="/console/systems">all systems →</a>
              </li>
            </ul>
          )
        ) : systems.kind === 'error' ? (
          <p class="error">{systems.message}</p>
        ) : (
          <p class="muted">loading…</p>
        )}
      </Section>
      <Section title="Latest failures" id="failures">
        {failures.length === 0 ? (
          <p class="muted">Nothing has failed.</p>
        ) : (
          <table class="plain">
            <thead>
              <tr>
                <th scope="col">what</th>
                <th scope="col">kind</th>
                <th scope="col">reason</th>
                <th scope="col">cell</th>
                <th scope="col">when</th>
              </tr>
            </thead>
            <tbody>
              {failures.map((f) => (
                <tr key={`${f.kind}:${f.subject}`} data-failure={f.subject}>
                  <td>
                    <a
                      href={
                        f.kind === 'task'
                          ? `/console/tasks/${encodeURIComponent(f.subject)}`
                          : `/console/instances/${f.subject.split('/').map(encodeURIComponent).join('/')}`
                      }
                    >
                      {f.subject}
                    </a>
                  </td>
                  <td>{f.kind}</td>
                  <td class="reason">{f.reason}</td>
                  <td>{f.cell_id || '—'}</td>
                  <td>
                    <Age at={f.at} now={now} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
    </div>
  );
}
