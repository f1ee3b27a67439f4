import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { TestCluster, waitFor } from '../testing/cluster-harness.js';
import { launchHeadlessChromium } from '../testing/headless-chromium.js';

/**
 * Issue 24's console in a real browser: Debian's headless Chromium driven by playwright-core,
 * against a real `berth server` (token auth) and a real cell. Every view is opened by its URL and
 * through the navigation; the actions (deploy, scale, destroy a unit, teardown) are done from the
 * page, and a viewer's page has no action buttons. Screenshots of each view at 1366×768 go to the
 * test's temp dir (and to BERTH_CONSOLE_SCREENSHOTS when set, to look at).
 */
const cluster = new TestCluster('berth-console-');
let serverUrl = '';
let adminToken = '';
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** What the page threw: checked after each test, so a failure names the test that caused it. */
const pageErrors: string[] = [];
const shots = process.env.BERTH_CONSOLE_SCREENSHOTS ?? join(cluster.root, 'screenshots');

async function api(method: string, path: string, body?: unknown, token = adminToken): Promise<Response> {
  return fetch(`${serverUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
}

async function shot(name: string, on: Page = page): Promise<void> {
  await on.screenshot({ path: join(shots, `${name}.png`) });
}

const siteYaml = `system: site
services:
  /web:
    image: bb:1
    command: ["/bin/sh", "-c", "httpd -p 8080 -h / && i=0 && while true; do echo tick $i; i=$((i+1)); sleep 1; done"]
    instances: 1
    ports: [8080]
    monitor: {tcp: 8080}
    memory_mb: 16
`;

before(async () => {
  mkdirSync(shots, { recursive: true });
  serverUrl = await cluster.startServer('server', '1s', ['--auth', 'tokens']);
  adminToken = readFileSync(join(cluster.root, 'server', 'admin.token'), 'utf8').trim();
  await cluster.startCell('k1', 'z1', 63500, serverUrl, ['--token', adminToken]);
  browser = await launchHeadlessChromium();
  context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  // Generous bounds, not expectations: a loaded CI machine starts containers slowly.
  context.setDefaultTimeout(120_000);
  page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.stack ?? err.message));
});

afterEach(() => {
  const thrown = pageErrors.splice(0);
  assert.deepEqual(thrown, [], 'the page threw');
});

after(async () => {
  await browser?.close();
  await cluster.cleanup();
});

describe('the console in headless Chromium', { timeout: 420_000 }, () => {
  it('asks for a token, names a wrong one, and takes one from the fragment', async () => {
    await page.goto(`${serverUrl}/console/`);
    await page.waitForSelector('#sign-in-reason:has-text("needs an API token")');
    await page.fill('#token', 'not-a-token');
    await page.press('#token', 'Enter');
    await page.waitForSelector('#sign-in-reason:has-text("invalid, expired or revoked")');
    await page.goto('about:blank');
    await page.goto(`${serverUrl}/console/cells#token=${adminToken}`);
    await page.waitForSelector('#feed-status:has-text("live")');
    // The token left the address bar; the deep link kept its view.
    assert.equal(page.url(), `${serverUrl}/console/cells`);
    await page.waitForSelector('#cell-table tr[data-key="k1"]');
    assert.match((await page.textContent('#who')) ?? '', /admin/);
    await shot('cells');
    // The server's root is the console: `/` redirects without a token, and the fragment rides along.
    const root = await fetch(`${serverUrl}/`, { redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/console/');
    const fresh = await context.browser()!.newContext({ viewport: { width: 1366, height: 768 } });
    const freshPage = await fresh.newPage();
    await freshPage.goto(`${serverUrl}/#token=${adminToken}`);
    await freshPage.waitForSelector('#feed-status:has-text("live")');
    assert.equal(freshPage.url(), `${serverUrl}/console/`);
    await fresh.close();
  });

  it('refuses an invalid definition pasted in the page, each problem at its line, and deploys nothing', async () => {
    await page.click('nav a:has-text("Systems")');
    await page.waitForSelector('#systems');
    await page.click('#deploy-link');
    const bad = siteYaml
      .replace('ports: [8080]', 'ports: [8080, 8080]')
      .replace('monitor: {tcp: 8080}', 'monitor: {tcp: 9090}');
    await page.fill('#definition', bad);
    await page.click('#deploy-submit');
    await page.waitForSelector('#deploy-problems');
    const items = await page.$$eval('#deploy-problems li[data-line]', (lis) =>
      lis.map((li) => [li.getAttribute('data-line'), li.textContent ?? '']),
    );
    assert.ok(
      items.some(([line, text]) => line === '7' && /8080 is listed twice/.test(text)),
      JSON.stringify(items),
    );
    assert.ok(
      items.some(([line, text]) => line === '8' && /9090 is not in ports/.test(text)),
      JSON.stringify(items),
    );
    await shot('deploy-problems');
    const systems = (await (await api('GET', '/v1/systems')).json()) as { systems: unknown[] };
    assert.equal(systems.systems.length, 0, 'nothing was deployed');
  });

  it('deploys from the page and shows the system roll out, its unit on its cell with its port', async () => {
    await page.fill('#definition', siteYaml);
    await page.click('#deploy-submit');
    await page.waitForURL(`${serverUrl}/console/systems/site`);
    await page.waitForSelector('#system .state[data-state="stable"]', { timeout: 180_000 });
    await page.waitForSelector('li[data-path="/web"] li[data-unit] :text("on k1")');
    assert.match((await page.textContent('li[data-path="/web"]')) ?? '', /ports 8080→\d+/);
    await page.waitForSelector('#deploy-table :text("succeeded")');
    await shot('system');
  });

  it('scales a service from the page; the overview and the instance table follow live', async () => {
    page.once('dialog', (dialog) => void dialog.accept('3'));
    await page.click('button[data-scale="/web"]');
    await page.waitForSelector('#system-message:has-text("accepted")');
    await waitFor('three units on the page', async () =>
      (await page.$$('li[data-path="/web"] li[data-unit]')).length === 3 ? true : undefined,
    );
    await page.click('nav a:has-text("Overview")');
    await page.waitForSelector('#cluster .stat:has-text("running") .stat-value:text-is("3")', {
      timeout: 120_000,
    });
    await shot('overview');

    await page.click('nav a:has-text("Instances")');
    await page.waitForSelector('#instance-count:has-text("3 of 3")');
    await page.fill('#instance-filter', 'site k1');
    await page.waitForSelector('#instance-count:has-text("3 of 3")');
    await page.fill('#instance-filter', 'no-such-thing');
    await page.waitForSelector('#instance-count:has-text("0 of 3")');
    // The filter is in the URL: the back button and a reload keep it.
    assert.match(page.url(), /\/console\/instances\?q=no-such-thing$/);
    await page.fill('#instance-filter', '');
    await page.click('#instance-table button[data-sort="index"]');
    await page.click('#instance-table button[data-sort="index"]');
    const indexes = await page.$$eval('#instance-table tbody tr[data-key]', (rows) =>
      rows.map((r) => r.querySelectorAll('td')[1]?.textContent),
    );
    assert.deepEqual(indexes, ['2', '1', '0']);
    await shot('instances');

    await page.click('#instance-table tr[data-key$="/0"] a');
    await page.waitForSelector('#history-table :text("Running")');
    assert.match(page.url(), /\/console\/instances\/[^/]+\/0$/);
    await shot('instance');
    await page.goBack();
    await page.waitForSelector('#instance-table');
  });

  it("follows an instance's log as it prints, and runs commands in its terminal", async () => {
    await page.click('#instance-table tr[data-key$="/1"] a');
    await page.waitForSelector('#log-status:has-text("following")');
    // The container prints "tick N" every second: the panel must show new lines without a reload.
    const ticks = async () =>
      Math.max(
        -1,
        ...(await page.$$eval('#log-lines .log-line', (lines) => lines.map((l) => l.textContent ?? ''))).map(
          (text) => Number(/tick (\d+)/.exec(text)?.[1] ?? -1),
        ),
      );
    const first = await waitFor('a tick in the log', async () =>
      (await ticks()) >= 0 ? ticks() : undefined,
    );
    await waitFor('a later tick, printed while the page watched', async () =>
      (await ticks()) > first ? true : undefined,
    );
    assert.match((await page.textContent('#log-lines')) ?? '', /\[site\.web\.[^/\]]+\/1\] tick \d+/);
    await page.click('#log-pause');
    await page.waitForSelector('#log-status:has-text("paused")');
    await page.click('#log-pause');
    await page.waitForSelector('#log-status:has-text("following")');

    await page.click('#exec-open');
    await page.waitForSelector('#exec-state:has-text("connected to")');
    await page.waitForSelector('#exec-terminal .xterm-rows');
    await page.keyboard.type('echo exec-$((6*7)) in $(hostname)\n');
    await waitFor('the command echoed in the terminal', async () =>
      /exec-42 in /.test((await page.textContent('#exec-terminal .xterm-rows')) ?? '') ? true : undefined,
    );
    await page.locator('#exec').scrollIntoViewIfNeeded();
    await shot('instance-terminal');
    await page.keyboard.type('exit 3\n');
    await page.waitForSelector('#exec-state:has-text("exited with code 3")');
    // The exec is the admin's action in the container's history.
    const guid = (await page.textContent('#instance code'))?.trim() ?? '';
    const history = (await (await api('GET', `/v1/containers/${guid}`)).json()) as {
      history: { status: string; entity_type: string; message?: string }[];
    };
    assert.ok(
      history.history.some(
        (h) => h.status === 'exec_start' && h.entity_type === 'user' && /\/bin\/sh/.test(h.message ?? ''),
      ),
      'the exec is in the history',
    );
    await page.goBack();
    await page.waitForSelector('#instance-table');
  });

  it('destroys a unit from the page, and shows the events of the cluster live', async () => {
    await page.goto(`${serverUrl}/console/systems/site`);
    await page.waitForSelector('li[data-path="/web"] li[data-unit]');
    // The events view shows what happens while the page follows the stream: wait until it does.
    await page.waitForSelector('#feed-status:has-text("live")');
    const units = await page.$$eval('li[data-path="/web"] li[data-unit]', (lis) =>
      lis.map((li) => li.getAttribute('data-unit')),
    );
    const destroyed = `li[data-path="/web"] li[data-unit="${units.at(-1)}"]`;
    // The instance the unit runs, as the page shows it (the feed fills it in).
    const instanceBefore = await waitFor('the unit with its instance', async () => {
      const guid = await page.getAttribute(destroyed, 'data-instance');
      return guid ? guid : undefined;
    });
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click(`button[data-destroy-unit="${units.at(-1)}"]`);
    await page.waitForSelector('#system-message:has-text("accepted")');
    // The unit moves on from alive (dying, dead), leaves the tree, and the service replaces it with
    // a unit of the same name on a new instance. Each can come and go between two looks, so any of
    // them shows that the page followed the destroy (how soon is the model's business, tested there).
    await waitFor('the unit dying, gone or replaced', async () => {
      const unit = await page.$(destroyed);
      if (!unit) return true;
      const seen = (await unit.textContent()) ?? '';
      if (/dying|dead/.test(seen)) return true;
      const instance = await unit.getAttribute('data-instance');
      if (instance && instance !== instanceBefore) return true;
      // What the page shows and what the server says, for a failure to tell a stalled page from a
      // stalled destroy.
      const system = await (await api('GET', '/v1/systems/site')).text();
      throw new Error(`the page shows "${seen}"; the server: ${system.slice(0, 2000)}`);
    });
    await page.click('nav a:has-text("Events")');
    await page.waitForSelector('#event-list li[data-event^="actual_lrp"]');
    await page.fill('#event-system', 'site');
    await page.waitForSelector('#event-list li');
    await page.fill('#event-system', 'another-system');
    await page.waitForSelector('#event-list li', { state: 'detached' });
    await page.fill('#event-system', '');
    await shot('events');
  });

  it('shows tasks and a task page', async () => {
    const res = await api('POST', '/v1/tasks', {
      task_guid: 'console-task',
      domain: 'console',
      image: 'bb:1',
      command: ['/bin/sh', '-c', 'echo hi > /tmp/r'],
      result_file: '/tmp/r',
      memory_mb: 8,
    });
    assert.equal(res.status, 201, await res.text());
    await page.click('nav a:has-text("Tasks")');
    await page.waitForSelector('#task-table a:has-text("console-task")');
    await page.click('#task-table a:has-text("console-task")');
    await page.waitForSelector('#task .state[data-state="COMPLETED"]', { timeout: 120_000 });
    assert.match((await page.textContent('#task')) ?? '', /hi/);
    await shot('task');
  });

  it('a viewer sees every view and no action; a revoked or expired token returns to sign-in keeping what was typed', async () => {
    const created = (await (await api('POST', '/v1/tokens', { role: 'viewer', name: 'watcher' })).json()) as {
      token: string;
      id: string;
    };
    const viewer = await context.browser()!.newContext({ viewport: { width: 1366, height: 768 } });
    const viewerPage = await viewer.newPage();
    await viewerPage.goto(`${serverUrl}/console/systems/site#token=${created.token}`);
    await viewerPage.waitForSelector('#service-tree li[data-path="/web"]');
    assert.match((await viewerPage.textContent('#who')) ?? '', /viewer/);
    for (const selector of ['#teardown', '#rollback', 'button[data-scale]', 'button[data-destroy-unit]'])
      assert.equal(await viewerPage.$(selector), null, `a viewer has no ${selector}`);
    await viewerPage.goto(`${serverUrl}/console/systems`);
    await viewerPage.waitForSelector('#system-table');
    assert.equal(await viewerPage.$('#deploy-link'), null);
    await viewerPage.goto(`${serverUrl}/console/cells/k1`);
    await viewerPage.waitForSelector('#cell');
    assert.equal(await viewerPage.$('#drain-cell'), null);
    // A viewer reads an instance's live log but gets no terminal.
    await viewerPage.goto(`${serverUrl}/console/instances`);
    await viewerPage.click('#instance-table tr[data-key$="/0"] a');
    await viewerPage.waitForSelector('#log-lines .log-line');
    assert.equal(await viewerPage.$('#exec-open'), null, 'a viewer has no terminal');
    await shot('viewer-system', viewerPage);
    await viewer.close();

    // An operator token revoked while its user types a definition.
    const operator = (await (
      await api('POST', '/v1/tokens', { role: 'operator', name: 'typist' })
    ).json()) as {
      token: string;
      id: string;
    };
    const typist = await context.browser()!.newContext({ viewport: { width: 1366, height: 768 } });
    const typistPage = await typist.newPage();
    await typistPage.goto(`${serverUrl}/console/deploy#token=${operator.token}`);
    await typistPage.waitForSelector('#definition');
    const draft = siteYaml.replace('system: site', 'system: draft');
    await typistPage.fill('#definition', draft);
    assert.equal((await api('DELETE', `/v1/tokens/${operator.id}`)).status, 204);
    // The page learns of the revocation from its next call: this deploy, or the event stream's own
    // re-check of its token (every 5 s), whichever comes first. On a slow machine the re-check can
    // open the sign-in first and its overlay then covers the button, so the deploy is clicked in the
    // page (the button's own click()), which works under the overlay and changes nothing else.
    await typistPage.$eval('#deploy-submit', (button) => (button as unknown as { click(): void }).click());
    await typistPage.waitForSelector('#sign-in-reason:has-text("invalid, expired or revoked")');
    await typistPage.fill('#token', adminToken);
    await typistPage.press('#token', 'Enter');
    await typistPage.waitForSelector('#sign-in', { state: 'detached' });
    assert.equal(await typistPage.inputValue('#definition'), draft, 'the draft survived the sign-in');
    await typist.close();

    // An operator token that expires while its user types (`expires_in_s`, `berth token create --ttl`).
    const shortLived = (await (
      await api('POST', '/v1/tokens', { role: 'operator', name: 'hasty', expires_in_s: 3 })
    ).json()) as { token: string };
    const hasty = await context.browser()!.newContext({ viewport: { width: 1366, height: 768 } });
    const hastyPage = await hasty.newPage();
    await hastyPage.goto(`${serverUrl}/console/deploy#token=${shortLived.token}`);
    await hastyPage.waitForSelector('#definition');
    const hastyDraft = siteYaml.replace('system: site', 'system: hasty');
    await hastyPage.fill('#definition', hastyDraft);
    await waitFor('the token expired', async () =>
      (await api('GET', '/v1/whoami', undefined, shortLived.token)).status === 401 ? true : undefined,
    );
    // No click needed: the page's next call (the cell list it re-reads every 5 s) is refused.
    await hastyPage.waitForSelector('#sign-in-reason:has-text("invalid, expired or revoked")');
    await hastyPage.fill('#token', adminToken);
    await hastyPage.press('#token', 'Enter');
    await hastyPage.waitForSelector('#sign-in', { state: 'detached' });
    assert.equal(await hastyPage.inputValue('#definition'), hastyDraft, 'the draft survived the expiry');
    await hasty.close();
  });

  it('tears the system down from the page after its name is typed, then destroys its cell', async () => {
    // A cell with units on it is not destroyed (seed 003 Machines); the page offers the forced way.
    await page.goto(`${serverUrl}/console/cells/k1`);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('#destroy-cell');
    await page.waitForSelector('#cell-message:has-text("unit(s) are assigned to it")');
    await page.waitForSelector('#force-destroy-cell');

    await page.goto(`${serverUrl}/console/systems/site`);
    await page.waitForSelector('#teardown');
    page.once('dialog', (dialog) => void dialog.accept('wrong'));
    await page.click('#teardown');
    await page.waitForSelector('#system-message:has-text("Not torn down")');
    page.once('dialog', (dialog) => void dialog.accept('site'));
    await page.click('#teardown');
    await page.waitForSelector('#system-message:has-text("accepted")');
    await waitFor('the system gone', async () => {
      const res = await api('GET', '/v1/systems');
      const body = (await res.json()) as { systems: { name: string }[] };
      return body.systems.some((s) => s.name === 'site') ? undefined : true;
    });
    await page.goto(`${serverUrl}/console/systems`);
    await page.waitForSelector('#systems :text("No systems yet")');
    await page.goto(`${serverUrl}/console/cells/k1`);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('#destroy-cell');
    await page.waitForSelector('#cell-message:has-text("accepted")');
    await shot('cell-destroyed');
    if (process.env.BERTH_CONSOLE_SCREENSHOTS) writeFileSync(join(shots, 'done'), 'ok\n');
  });
});
