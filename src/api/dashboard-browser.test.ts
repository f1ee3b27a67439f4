import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { runBerth } from '../testing/berth-cli.js';
import { TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 8's dashboard in a real browser: Debian's headless Chromium driven by playwright-core,
 * against a real `berth server` and cell. The page must show a deployed system turn `stable`
 * without a reload, its units with their cells, and a container's history as a timeline. The server
 * runs with token auth, as `berth server` does by default: the page signs in with the admin token.
 */
const cluster = new TestCluster('berth-dashboard-');
let serverUrl = '';
let adminToken = '';
let browser: Browser;
let page: Page;

before(async () => {
  // Later flags win: the harness's `--auth none` gives way to tokens.
  serverUrl = await cluster.startServer('server', '1s', ['--auth', 'tokens']);
  adminToken = readFileSync(join(cluster.root, 'server', 'admin.token'), 'utf8').trim();
  await cluster.startCell('d1', 'z1', 63400, serverUrl, ['--token', adminToken]);
  // Flags as for any headless Chromium in a closed network, as root; playwright gives it a fresh
  // profile of its own.
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
});

after(async () => {
  await browser?.close();
  await cluster.cleanup();
});

describe('the dashboard in headless Chromium', { timeout: 300_000 }, () => {
  it('shows a system deployed after the page loaded turn stable, its units on their cells, and a timeline', async () => {
    // No token: the page asks for one; a wrong one is named as such.
    await page.goto(`${serverUrl}/`);
    await page.waitForSelector('#sign-in:has-text("needs an API token")');
    await page.fill('#token', 'not-a-token');
    await page.press('#token', 'Enter');
    await page.waitForSelector('#sign-in:has-text("invalid or revoked")');

    // As `berth up` prints it: the token in the fragment, which the page keeps for the tab only and
    // drops from the address bar. (A fresh load: a fragment-only navigation would not reload.)
    await page.goto('about:blank');
    await page.goto(`${serverUrl}/#token=${adminToken}`);
    await page.waitForSelector('#systems:has-text("No systems yet")');
    assert.equal(page.url(), `${serverUrl}/`);
    assert.equal(await page.evaluate('sessionStorage.getItem("berth-token")'), adminToken);
    assert.equal(await page.textContent('#error'), '');

    const file = join(cluster.root, 'site.yaml');
    writeFileSync(
      file,
      `system: site
services:
  /web/front:
    image: bb:1
    command: ["/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/"]
    instances: 2
    ports: [8080]
    monitor: {tcp: 8080}
    memory_mb: 16
    relations: ["/store"]
  /store:
    image: bb:1
    command: ["/bin/sh", "-c", "while true; do echo store-alive; sleep 0.2; done"]
    memory_mb: 16
`,
    );
    const deployed = await runBerth(['deploy', file, '--server', serverUrl], { BERTH_TOKEN: adminToken });
    assert.equal(deployed.code, 0, deployed.stderr);

    // The page polls: no reload, the system appears and turns stable.
    await page.waitForSelector('li[data-system="site"] > .state[data-state="stable"]', { timeout: 180_000 });
    // A tree: /web/front sits under /web.
    const nested = await page.$('li[data-path="/web"] li[data-path="/web/front"]');
    assert.ok(nested, 'services are nested by path');
    const front = (await page.textContent('li[data-path="/web/front"]')) ?? '';
    assert.equal((front.match(/unit \d/g) ?? []).length, 2, front);
    assert.equal((front.match(/ on d1/g) ?? []).length, 2, `each unit shows its cell: ${front}`);
    assert.match(
      (await page.textContent('li[data-system="site"]')) ?? '',
      /relation \/store ↔ \/web\/front|relation \/web\/front ↔ \/store/,
    );

    await page.click('li[data-path="/web/front"] li[data-unit="/web/front#0"] .unit');
    await page.waitForSelector('#timeline-table');
    const timeline = (await page.textContent('#timeline')) ?? '';
    assert.match(timeline, /Running/, timeline);
    assert.match(timeline, /Created/, timeline);
    // The live log panel (issue 22): a unit's lines as its container prints them.
    await page.click('li[data-path="/store"] li[data-unit="/store#0"] .unit');
    await page.waitForSelector('#live-log .log-line:has-text("[site/store/0] store-alive")', {
      timeout: 30_000,
    });
    await page.screenshot({ path: join(cluster.root, 'dashboard.png'), fullPage: true });
    if (process.env.BERTH_KEEP_SCREENSHOT)
      writeFileSync(process.env.BERTH_KEEP_SCREENSHOT, await page.screenshot({ fullPage: true }));

    // Teardown shows up too: the system leaves the page.
    const down = await runBerth(['teardown', 'site', '--wait', '--server', serverUrl], {
      BERTH_TOKEN: adminToken,
    });
    assert.equal(down.code, 0, down.stderr);
    await waitFor('the system gone from the page', async () =>
      (await page.$('li[data-system="site"]')) === null ? true : undefined,
    );
  });
});
