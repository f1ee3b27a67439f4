import { useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import type {
  ActionProgress,
  ActionRecord,
  DeployRecord,
  ServiceStatus,
  SystemStatusJson,
  SystemSummary,
} from '../../../model/index.js';
import { useClusterFeed } from '../cluster-feed.js';
import { apiGet, apiSend } from '../console-api.js';
import { useSession } from '../session.js';
import { useResource } from '../use-resource.js';
import { Age, Section, StateBadge } from '../widgets.js';
import { instanceHref } from './instances.js';

export function Systems() {
  const feed = useClusterFeed();
  const session = useSession();
  const systems = useResource(
    () => apiGet<{ systems: SystemSummary[] }>('/v1/systems?limit=1000'),
    'systems',
    feed.view.version + feed.modelVersion,
  );
  return (
    <Section
      title="Systems"
      id="systems"
      actions={
        session.canAct ? (
          <a class="button" href="/console/deploy" id="deploy-link">
            Deploy…
          </a>
        ) : null
      }
    >
      {systems.kind === 'ready' ? (
        systems.value.systems.length === 0 ? (
          <p class="muted">No systems yet.</p>
        ) : (
          <table class="plain" id="system-table">
            <thead>
              <tr>
                <th scope="col">system</th>
                <th scope="col">state</th>
                <th scope="col">reason</th>
              </tr>
            </thead>
            <tbody>
              {systems.value.systems.map((s) => (
                <tr key={s.name} data-system={s.name}>
                  <td>
                    <a href={`/console/systems/${encodeURIComponent(s.name)}`}>{s.name}</a>
                  </td>
                  <td>
                    <StateBadge state={s.state} />
                  </td>
                  <td class="reason">{s.reason ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : systems.kind === 'error' ? (
        <p class="error">{systems.message}</p>
      ) : (
        <p class="muted">loading…</p>
      )}
    </Section>
  );
}

/** Services nested by path segment: /web/api sits under /web, as in the system's tree. */
function serviceTree(services: readonly ServiceStatus[]): Map<string, ServiceStatus[]> {
  const children = new Map<string, ServiceStatus[]>();
  const paths = new Set(services.map((s) => s.path));
  for (const service of [...services].sort((a, b) => a.path.localeCompare(b.path))) {
    const segments = service.path.split('/').filter(Boolean);
    let parent = '';
    for (let i = segments.length - 1; i > 0; i--) {
      const candidate = `/${segments.slice(0, i).join('/')}`;
      if (paths.has(candidate)) {
        parent = candidate;
        break;
      }
    }
    children.set(parent, [...(children.get(parent) ?? []), service]);
  }
  return children;
}

function ServiceNode(props: {
  readonly service: ServiceStatus;
  readonly tree: Map<string, ServiceStatus[]>;
  readonly system: string;
  readonly canAct: boolean;
  readonly onAction: (label: string, run: () => Promise<ActionRecord>) => void;
}) {
  const feed = useClusterFeed();
  const { service } = props;
  const kind = service.kind === 'job' ? 'job' : service.sidecar_of ? `sidecar of ${service.sidecar_of}` : '';
  const scale = () => {
    const answer = prompt(`Instances of ${service.path}:`, String(service.units.length));
    if (answer === null) return;
    const instances = Number(answer);
    if (!Number.isInteger(instances) || instances < 0) {
      alert(`"${answer}" is not a whole number of instances.`);
      return;
    }
    props.onAction(`scale ${service.path} to ${instances}`, () =>
      apiSend('POST', `/v1/systems/${encodeURIComponent(props.system)}/services/scale`, {
        path: service.path,
        instances,
      }),
    );
  };
  return (
    <li data-path={service.path}>
      <div class="service-line">
        <strong>{service.path}</strong> <StateBadge state={service.state} />{' '}
        <span class="muted">{[service.life, kind].filter(Boolean).join(' · ')}</span>
        {service.reason ? <span class="reason"> {service.reason}</span> : null}
        {props.canAct && service.kind !== 'job' && !service.sidecar_of ? (
          <button type="button" class="small" data-scale={service.path} onClick={scale}>
            Scale
          </button>
        ) : null}
      </div>
      <ul class="units">
        {service.units.map((unit) => {
          const lrp = feed.view.actual.get(`${service.process_guid}/${unit.index}`);
          const ports = lrp?.ports.map((p) => `${p.container_port}→${p.host_port}`).join(', ');
          return (
            <li key={unit.name} data-unit={unit.name} data-instance={lrp?.instance_guid || undefined}>
              {service.process_guid ? (
                <a href={instanceHref({ process_guid: service.process_guid, index: unit.index })}>
                  unit {unit.index}
                </a>
              ) : (
                `unit ${unit.index}`
              )}
              {unit.principal ? <span class="muted"> (sidecar of {unit.principal})</span> : null}{' '}
              <StateBadge state={unit.state || unit.life} />
              {unit.life !== 'alive' ? <span class="muted life"> {unit.life}</span> : null}
              {unit.cell_id ? <span class="muted"> on {unit.cell_id}</span> : null}
              {ports ? <span class="muted"> · ports {ports}</span> : null}
              {props.canAct ? (
                <button
                  type="button"
                  class="small danger"
                  data-destroy-unit={unit.name}
                  onClick={() => {
                    if (confirm(`Destroy ${service.path} unit ${unit.index}?`))
                      props.onAction(`destroy ${service.path} unit ${unit.index}`, () =>
                        apiSend('POST', `/v1/systems/${encodeURIComponent(props.system)}/units/destroy`, {
                          path: service.path,
                          index: unit.index,
                        }),
                      );
                  }}
                >
                  Destroy
                </button>
              ) : null}
            </li>
          );
        })}
      </ul>
      {(props.tree.get(service.path) ?? []).length > 0 && (
        <ul class="tree">
          {(props.tree.get(service.path) ?? []).map((child) => (
            <ServiceNode key={child.path} {...props} service={child} />
          ))}
        </ul>
      )}
    </li>
  );
}

/** A deploy or teardown in flight: what it waits for. */
function InFlight({ action, trigger }: { readonly action: ActionRecord; readonly trigger: number }) {
  const progress = useResource(
    () =>
      apiGet<ActionRecord & { progress?: ActionProgress }>(`/v1/deploys/${encodeURIComponent(action.id)}`),
    action.id,
    trigger,
    1000,
  );
  if (progress.kind !== 'ready' || !progress.value.progress)
    return (
      <p class="muted">
        {action.kind} {action.state}…
      </p>
    );
  const p = progress.value.progress;
  if (p.kind === 'teardown')
    return (
      <p id="deploy-progress">
        Teardown in progress: {p.desired_lrps} LRPs, {p.instances} instances, {p.tasks} tasks left.
      </p>
    );
  return (
    <div id="deploy-progress">
      <p>
        Deploy in progress: services {p.services_ready}/{p.services_desired}, instances {p.instances_ready}/
        {p.instances_desired}, jobs {p.jobs_completed}/{p.jobs_desired}.
      </p>
      <ul>
        {p.waiting_on.map((line) => (
          <li key={line} class="muted">
            {line}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function SystemDetail() {
  const { params } = useRoute();
  const name = params.name ?? '';
  const feed = useClusterFeed();
  const session = useSession();
  const location = useLocation();
  const [message, setMessage] = useState('');
  const [bump, setBump] = useState(0);
  // Instances change with BBS events; units' lives, deploys and their progress with the model's.
  const trigger = feed.view.version + feed.systemVersion(name) + bump;
  const system = useResource(
    () => apiGet<SystemStatusJson>(`/v1/systems/${encodeURIComponent(name)}`),
    name,
    trigger,
    1000,
  );
  const deploys = useResource(
    () => apiGet<{ deploys: DeployRecord[] }>(`/v1/systems/${encodeURIComponent(name)}/deploys?limit=20`),
    name,
    trigger,
    2000,
  );
  const act = (label: string, run: () => Promise<ActionRecord>) => {
    run().then(
      (action) => {
        setMessage(`${label}: accepted (action ${action.id}).`);
        setBump((n) => n + 1);
      },
      (err: unknown) => setMessage(`${label}: ${err instanceof Error ? err.message : String(err)}`),
    );
  };
  if (system.kind === 'error')
    return (
      <Section title={name} id="system">
        <p
          class={
            system.message.includes('not found') || system.message.includes('No system') ? 'muted' : 'error'
          }
        >
          {system.message}
        </p>
        <a href="/console/systems">← all systems</a>
      </Section>
    );
  if (system.kind === 'loading')
    return (
      <Section title={name} id="system">
        <p class="muted">loading…</p>
      </Section>
    );
  const s = system.value;
  const tree = serviceTree(s.services);
  const inFlight = s.actions.filter((a) => a.state === 'accepted' || a.state === 'in_progress');
  const teardown = () => {
    const typed = prompt(
      `Tear down ${name}? Everything of it stops and is removed. Type the system's name to confirm:`,
    );
    if (typed === null) return;
    if (typed !== name) {
      setMessage(`Not torn down: "${typed}" is not "${name}".`);
      return;
    }
    act(`teardown ${name}`, () => apiSend('POST', `/v1/systems/${encodeURIComponent(name)}/teardown`));
  };
  const rollback = () => {
    if (confirm(`Roll ${name} back to its previous successful deploy?`))
      act(`rollback ${name}`, () => apiSend('POST', `/v1/systems/${encodeURIComponent(name)}/rollback`, {}));
  };
  return (
    <div class="detail">
      <Section
        title={`${s.name}`}
        id="system"
        actions={
          session.canAct ? (
            <div class="actions">
              <button
                type="button"
                onClick={() => location.route(`/console/deploy?system=${encodeURIComponent(name)}`)}
              >
                Redeploy…
              </button>
              <button type="button" id="rollback" onClick={rollback}>
                Rollback
              </button>
              <button type="button" id="teardown" class="danger" onClick={teardown}>
                Teardown
              </button>
            </div>
          ) : null
        }
      >
        <p>
          <StateBadge state={s.state} /> <span class="muted">phase {s.phase}</span>
          {s.reason ? (
            <span class="reason" id="system-reason">
              {' '}
              {s.reason}
            </span>
          ) : null}
        </p>
        {message && (
          <p role="status" id="system-message">
            {message}
          </p>
        )}
        {inFlight.map((a) => (
          <InFlight key={a.id} action={a} trigger={trigger} />
        ))}
        <ul class="tree" id="service-tree">
          {(tree.get('') ?? []).map((service) => (
            <ServiceNode
              key={service.path}
              service={service}
              tree={tree}
              system={name}
              canAct={session.canAct}
              onAction={act}
            />
          ))}
        </ul>
        {s.relations.length > 0 && (
          <ul class="relations">
            {s.relations.map((r) => (
              <li key={r.endpoints.join('|')} class="muted">
                relation {r.endpoints.join(' ↔ ')} ({r.kind}, {r.life})
              </li>
            ))}
          </ul>
        )}
      </Section>
      <Section title="Deploys" id="deploys">
        {deploys.kind === 'ready' ? (
          <table class="plain" id="deploy-table">
            <thead>
              <tr>
                <th scope="col">when</th>
                <th scope="col">what</th>
                <th scope="col">who</th>
                <th scope="col">outcome</th>
                <th scope="col">definition</th>
              </tr>
            </thead>
            <tbody>
              {deploys.value.deploys.map((d) => (
                <tr key={d.id}>
                  <td>
                    <Age at={d.created_at} now={Date.now()} />
                  </td>
                  <td>
                    {d.kind}
                    {d.rollback_of ? ' (rollback)' : ''}
                  </td>
                  <td>{d.user || '—'}</td>
                  <td>
                    <StateBadge state={d.state} /> <span class="reason">{d.reason}</span>
                  </td>
                  <td>
                    <code title={d.digest ?? ''}>{d.digest ? d.digest.slice(0, 19) : '—'}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <p class="muted">{deploys.kind === 'error' ? deploys.message : 'loading…'}</p>
        )}
      </Section>
    </div>
  );
}
