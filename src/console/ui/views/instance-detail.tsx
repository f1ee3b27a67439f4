import { useRoute } from 'preact-iso';
import { actualKey } from '../../model/cluster-view.js';
import { useClusterFeed } from '../cluster-feed.js';
import { containerHistory } from '../console-api.js';
import { ExecTerminal } from '../exec-terminal.js';
import { LiveLog } from '../live-log.js';
import { useSession } from '../session.js';
import { useResource } from '../use-resource.js';
import { Age, Section, StateBadge } from '../widgets.js';

/** One instance: where it runs, its ports, why it failed, and its container's history. */
export function InstanceDetail() {
  const { params } = useRoute();
  const processGuid = params.guid ?? '';
  const index = Number(params.index ?? '0');
  const feed = useClusterFeed();
  const session = useSession();
  const lrp = feed.view.actual.get(actualKey({ process_guid: processGuid, index, evacuating: false }));
  const evacuating = feed.view.actual.get(actualKey({ process_guid: processGuid, index, evacuating: true }));
  const desired = feed.view.desired.get(processGuid);
  const guid = lrp?.instance_guid ?? '';
  const history = useResource(
    () => (guid ? containerHistory(guid) : Promise.resolve(undefined)),
    guid,
    feed.view.version,
    1500,
  );
  const now = Date.now();
  if (!lrp && !evacuating)
    return (
      <Section title={`${processGuid}/${index}`} id="instance">
        <p class="muted">
          {feed.status.kind === 'live' ? 'No such instance (it may have been removed).' : 'loading…'}
        </p>
      </Section>
    );
  const shown = lrp ?? evacuating;
  return (
    <div class="detail">
      <Section title={`${processGuid} #${index}`} id="instance">
        <dl class="facts">
          <dt>state</dt>
          <dd>
            <StateBadge state={shown?.state ?? ''} /> <Age at={shown?.since ?? null} now={now} />
          </dd>
          <dt>cell</dt>
          <dd>
            {shown?.cell_id ? (
              <a href={`/console/cells/${encodeURIComponent(shown.cell_id)}`}>{shown.cell_id}</a>
            ) : (
              '—'
            )}
          </dd>
          <dt>address</dt>
          <dd>
            {shown?.address || '—'}
            {shown && shown.ports.length > 0
              ? ` · ports ${shown.ports.map((p) => `${p.container_port}→${p.host_port}`).join(', ')}`
              : ''}
          </dd>
          <dt>crashes</dt>
          <dd>
            {shown?.crash_count ?? 0}
            {shown?.crash_reason ? <span class="reason"> — {shown.crash_reason}</span> : null}
          </dd>
          {shown?.placement_error ? (
            <>
              <dt>placement error</dt>
              <dd class="reason">{shown.placement_error}</dd>
            </>
          ) : null}
          {evacuating && lrp ? (
            <>
              <dt>evacuating copy</dt>
              <dd>
                on {evacuating.cell_id}, <StateBadge state={evacuating.state} />
              </dd>
            </>
          ) : null}
          <dt>image</dt>
          <dd>{desired?.image ?? '—'}</dd>
          <dt>container</dt>
          <dd>
            <code>{guid || '—'}</code>
          </dd>
        </dl>
      </Section>
      <Section title="Live log" id="log">
        <LiveLog app={processGuid} index={index} />
      </Section>
      {session.canAct ? (
        <Section title="Terminal" id="exec">
          {shown?.state === 'RUNNING' ? (
            <ExecTerminal app={processGuid} index={index} />
          ) : (
            <p class="muted">
              A terminal opens into a RUNNING instance; this one is {shown?.state ?? 'gone'}.
            </p>
          )}
        </Section>
      ) : null}
      <Section title="History" id="history">
        {history.kind === 'ready' && history.value ? (
          <table class="plain" id="history-table">
            <thead>
              <tr>
                <th scope="col">time</th>
                <th scope="col">status</th>
                <th scope="col">by</th>
                <th scope="col">exit</th>
                <th scope="col">message</th>
              </tr>
            </thead>
            <tbody>
              {history.value.history.map((item) => (
                <tr key={item.id}>
                  <td>
                    <time dateTime={item.time_recorded}>
                      {item.time_recorded.replace('T', ' ').replace('Z', '')}
                    </time>
                  </td>
                  <td>
                    <StateBadge state={item.status} />
                  </td>
                  <td>{item.entity_type === 'user' ? `user ${item.entity_id ?? ''}` : item.entity_type}</td>
                  <td>{item.exit_code ?? ''}</td>
                  <td class="reason">{item.message ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : history.kind === 'error' ? (
          <p class="muted">No history recorded yet for this container ({history.message}).</p>
        ) : (
          <p class="muted">{guid ? 'loading…' : 'Not placed yet.'}</p>
        )}
      </Section>
    </div>
  );
}
