import { useEffect, useState } from 'preact/hooks';
import { ErrorBoundary, LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { authGate, useAuthGate } from './auth-gate.js';
import { clusterFeed, useClusterFeed } from './cluster-feed.js';
import { type Principal, SignInNeeded, token, whoami } from './console-api.js';
import { SessionContext, sessionOf } from './session.js';
import { SignIn } from './sign-in.js';
import { CellDetail, Cells } from './views/cells.js';
import { Deploy } from './views/deploy.js';
import { Events } from './views/events.js';
import { InstanceDetail } from './views/instance-detail.js';
import { Instances } from './views/instances.js';
import { Overview } from './views/overview.js';
import { SystemDetail, Systems } from './views/systems.js';
import { TaskDetail, Tasks } from './views/tasks.js';

const sections = [
  { href: '/console/', label: 'Overview', match: (p: string) => p === '/console/' || p === '/console' },
  {
    href: '/console/systems',
    label: 'Systems',
    match: (p: string) => p.startsWith('/console/systems') || p.startsWith('/console/deploy'),
  },
  { href: '/console/cells', label: 'Cells', match: (p: string) => p.startsWith('/console/cells') },
  {
    href: '/console/instances',
    label: 'Instances',
    match: (p: string) => p.startsWith('/console/instances'),
  },
  { href: '/console/tasks', label: 'Tasks', match: (p: string) => p.startsWith('/console/tasks') },
  { href: '/console/events', label: 'Events', match: (p: string) => p.startsWith('/console/events') },
];

function Nav({ principal }: { readonly principal: Principal | undefined }) {
  const { path } = useLocation();
  const feed = useClusterFeed();
  const status = feed.status;
  return (
    <header class="top">
      <a class="brand" href="/console/">
        berth
      </a>
      <nav aria-label="console sections">
        <ul>
          {sections.map((s) => (
            <li key={s.href}>
              <a href={s.href} aria-current={s.match(path) ? 'page' : undefined}>
                {s.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <span
        class={`feed feed-${status.kind}`}
        id="feed-status"
        role="status"
        title={'reason' in status ? status.reason : ''}
      >
        {status.kind === 'live'
          ? '● live'
          : status.kind === 'retrying'
            ? '○ reconnecting'
            : status.kind === 'sign-in'
              ? '○ signed out'
              : '○ connecting'}
      </span>
      {principal ? (
        <span class="who" id="who">
          {principal.user} · {principal.role}{' '}
          <button
            type="button"
            class="link"
            onClick={() => {
              token.clear();
              clusterFeed.stop();
              authGate.require('Signed out.');
            }}
          >
            sign out
          </button>
        </span>
      ) : null}
    </header>
  );
}

function NotFound() {
  return (
    <section class="panel">
      <h2>Not found</h2>
      <p>
        No such page. <a href="/console/">Back to the overview</a>.
      </p>
    </section>
  );
}

export function App() {
  const signInReason = useAuthGate();
  const [principal, setPrincipal] = useState<Principal | undefined>(undefined);
  const identify = (restartFeed: boolean) =>
    whoami().then(
      (p) => {
        setPrincipal(p);
        authGate.clear();
        if (restartFeed) clusterFeed.restart();
      },
      (err: unknown) => authGate.require(err instanceof SignInNeeded ? err.message : String(err)),
    );
  useEffect(() => {
    // The feed starts beside whoami, not after it: a page load waits one round trip less. A
    // refused token stops both at the sign-in, which restarts the feed with the new token.
    clusterFeed.restart();
    void identify(false);
    return () => clusterFeed.stop();
  }, []);
  return (
    <LocationProvider scope="/console">
      <SessionContext.Provider value={sessionOf(principal ?? { user: '', role: 'viewer' })}>
        <Nav principal={principal} />
        <main id="main">
          <ErrorBoundary>
            <Router>
              <Route path="/console" component={Overview} />
              <Route path="/console/" component={Overview} />
              <Route path="/console/systems" component={Systems} />
              <Route path="/console/systems/:name" component={SystemDetail} />
              <Route path="/console/deploy" component={Deploy} />
              <Route path="/console/cells" component={Cells} />
              <Route path="/console/cells/:id" component={CellDetail} />
              <Route path="/console/instances" component={Instances} />
              <Route path="/console/instances/:guid/:index" component={InstanceDetail} />
              <Route path="/console/tasks" component={Tasks} />
              <Route path="/console/tasks/:guid" component={TaskDetail} />
              <Route path="/console/events" component={Events} />
              <Route default component={NotFound} />
            </Router>
          </ErrorBoundary>
        </main>
        {signInReason !== '' && <SignIn reason={signInReason} onToken={() => void identify(true)} />}
      </SessionContext.Provider>
    </LocationProvider>
  );
}
