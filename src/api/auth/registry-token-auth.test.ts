import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { openBbsStore, type SqlBbsStore } from '../../bbs/index.js';
import { secretKeyFileName } from '../../model/index.js';
import { pullImage, pullSource, pushImage, RegistryClient } from '../../registry/index.js';
import { openImageStore } from '../../runtime/image/index.js';
import { tarBytes, writeOciLayout } from '../../testing/oci-fixture-builder.js';
import { startBbsServer } from '../berth-server.js';
import { buildApp } from '../build-app.js';
import { createHistoryServerParts } from '../history-server-parts.js';
import { allowedGrants, parseScopes, RegistryTokens } from './registry-token-auth.js';
import { adminTokenPath, type TokenStore } from './token-store.js';

const principal = { token_id: 't1', user: 'vera', role: 'viewer' } as const;

describe('registry tokens (pure)', () => {
  it('scopes parse as docker sends them; a role keeps only what it may do', () => {
    assert.deepEqual(
      parseScopes(['repository:team/app:pull,push repository:other:*', 'registry:catalog:*']),
      [
        { name: 'team/app', actions: ['pull', 'push'] },
        { name: 'other', actions: ['pull', 'push', 'delete'] },
      ],
    );
    assert.deepEqual(allowedGrants('viewer', parseScopes(['repository:team/app:pull,push'])), [
      { name: 'team/app', actions: ['pull'] },
    ]);
    assert.deepEqual(allowedGrants('viewer', parseScopes(['repository:a:push'])), []);
  });

  it('a token verifies until it expires; a forged or foreign one never does', () => {
    let now = 1_000_000;
    const tokens = new RegistryTokens({ ttlMs: 60_000, now: () => now });
    const issued = tokens.issue(principal, ['repository:team/app:pull,push']);
    assert.equal(issued.expires_in, 60);
    assert.equal(issued.token, issued.access_token);
    const claims = tokens.verify(issued.token);
    assert.deepEqual(claims?.access, [{ name: 'team/app', actions: ['pull'] }]);
    assert.equal(claims?.principal.user, 'vera');
    const [prefix, payload, signature] = issued.token.split('.');
    const forged = Buffer.from(
      JSON.stringify({ ...claims, principal: { ...principal, role: 'admin' } }),
    ).toString('base64url');
    assert.equal(tokens.verify(`${prefix}.${forged}.${signature}`), undefined, 'claims are signed');
    assert.equal(new RegistryTokens().verify(issued.token), undefined, "another server's key");
    assert.equal(tokens.verify(`${prefix}.${payload}`), undefined);
    now += 60_000;
    assert.equal(tokens.verify(issued.token), undefined, 'expired');
  });
});

const hasSkopeo = spawnSync('skopeo', ['--version'], { stdio: 'ignore' }).status === 0;

/**
 * The token flow on berth's real server app (tokens on), driven by berth's own registry client
 * and by skopeo: every 401 under /v2/ names the token endpoint, credentials (an API token as
 * password) buy a token scoped to the repository, a viewer's token pulls but cannot push.
 */
describe('registry token flow on the server', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-registry-token-'));
  let store: SqlBbsStore;
  let tokens: TokenStore;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let url = '';
  let host = '';
  let operator = '';
  let viewer = '';
  let tokenRequests = 0;

  before(async () => {
    store = await openBbsStore(':memory:');
    // The history's migrations create the api_tokens table the tokens live in.
    const auth = await createHistoryServerParts(store, { auth: 'tokens', dataDir: scratch });
    tokens = auth.tokens;
    app = await buildApp({
      store,
      auth: auth.auth,
      registry: { dataDir: join(scratch, 'server') },
      logger: false,
    });
    app.addHook('onRequest', async (request) => {
      if (request.url.startsWith('/v2/token')) tokenRequests += 1;
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    host = new URL(url).host;
    operator = (await tokens.create({ role: 'operator', name: 'olga' })).token;
    viewer = (await tokens.create({ role: 'viewer', name: 'vera' })).token;
    const layout = join(scratch, 'layout');
    mkdirSync(layout);
    writeOciLayout(layout, { layers: [await tarBytes([{ name: 'hello', body: 'token flow\n' }])] });
    await openImageStore(join(scratch, 'seed')).importArchive(layout, { name: 'team/app:1' });
  });
  after(async () => {
    await app.close();
    await store.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('a 401 names the token endpoint, service and scope', async () => {
    const base = await fetch(`${url}/v2/`);
    assert.equal(base.status, 401);
    assert.equal(base.headers.get('www-authenticate'), `Bearer realm="${url}/v2/token",service="berth"`);
    const push = await fetch(`${url}/v2/team/app/blobs/uploads/`, { method: 'POST' });
    assert.equal(
      push.headers.get('www-authenticate'),
      `Bearer realm="${url}/v2/token",service="berth",scope="repository:team/app:pull,push"`,
    );
    const anonymous = await fetch(`${url}/v2/token?service=berth&scope=repository:team/app:pull`);
    assert.equal(anonymous.status, 401, 'no token for anonymous callers');
  });

  it('credentials buy a scoped token: push and pull go through it; another repository asks again', async () => {
    const credentials = { username: 'olga', password: operator };
    tokenRequests = 0;
    const client = new RegistryClient({ serverUrl: url, credentials });
    const pushed = await pushImage(openImageStore(join(scratch, 'seed')), client, 'team/app:1');
    assert.ok(tokenRequests >= 1 && tokenRequests <= 2, `tokens asked for: ${tokenRequests}`);
    const source = pullSource(`${host}/team/app:1`, {
      serverUrl: 'http://127.0.0.1:1',
      creds: `olga:${operator}`,
    });
    const pulled = await pullImage(openImageStore(join(scratch, 'puller')), source.client, source.reference);
    assert.equal(pulled.manifestDigest, pushed.manifestDigest);

    const issued = (await (
      await fetch(`${url}/v2/token?service=berth&scope=repository:team/app:pull`, {
        headers: { authorization: `Basic ${Buffer.from(`x:${operator}`).toString('base64')}` },
      })
    ).json()) as { token: string };
    const bearer = { authorization: `Bearer ${issued.token}` };
    assert.equal((await fetch(`${url}/v2/team/app/manifests/1`, { headers: bearer })).status, 200);
    const elsewhere = await fetch(`${url}/v2/other/app/manifests/1`, { headers: bearer });
    assert.equal(elsewhere.status, 401);
    assert.match(
      elsewhere.headers.get('www-authenticate') ?? '',
      /scope="repository:other\/app:pull",error="insufficient_scope"/,
    );
    const write = await fetch(`${url}/v2/team/app/blobs/uploads/`, { method: 'POST', headers: bearer });
    assert.equal(write.status, 401, 'a pull token does not push');
  });

  it('a cross-repository mount challenges for both repositories; the token they buy mounts', async () => {
    const basic = { authorization: `Basic ${Buffer.from(`x:${operator}`).toString('base64')}` };
    const manifest = (await (await fetch(`${url}/v2/team/app/manifests/1`, { headers: basic })).json()) as {
      layers: { digest: string }[];
    };
    const layer = manifest.layers[0]?.digest ?? '';
    const mountPath = `/v2/team/copy/blobs/uploads/?mount=${layer}&from=team/app`;
    const challenged = await fetch(`${url}${mountPath}`, { method: 'POST' });
    assert.equal(challenged.status, 401);
    const scope = /scope="([^"]*)"/.exec(challenged.headers.get('www-authenticate') ?? '')?.[1];
    assert.equal(scope, 'repository:team/copy:pull,push repository:team/app:pull');
    // As the conformance suite's client (reggie) does: the challenge's scope as one parameter.
    const issued = (await (
      await fetch(`${url}/v2/token?service=berth&scope=${encodeURIComponent(scope ?? '')}`, {
        headers: basic,
      })
    ).json()) as { token: string };
    const mounted = await fetch(`${url}${mountPath}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${issued.token}` },
    });
    assert.equal(mounted.status, 201, await mounted.clone().text());
    assert.equal(mounted.headers.get('location'), `/v2/team/copy/blobs/${layer}`);
  });

  it("a viewer's token pulls but cannot push (403 denied)", async () => {
    const client = new RegistryClient({
      serverUrl: url,
      credentials: { username: 'vera', password: viewer },
    });
    assert.equal(
      (await client.getManifest('team/app', '1')).mediaType,
      'application/vnd.oci.image.manifest.v1+json',
    );
    await assert.rejects(
      pushImage(openImageStore(join(scratch, 'seed')), client, 'team/app:1', 'team/viewer:1'),
      (err: Error & { code?: string }) => err.code === 'forbidden' && /403/.test(err.message),
    );
  });

  it('skopeo copies through the token flow with --src-creds and --dest-creds', {
    skip: hasSkopeo ? false : 'no skopeo',
  }, async () => {
    const run = promisify(execFile);
    await run('skopeo', [
      'copy',
      '--quiet',
      '--src-tls-verify=false',
      '--dest-tls-verify=false',
      '--src-creds',
      `vera:${viewer}`,
      '--dest-creds',
      `olga:${operator}`,
      `docker://${host}/team/app:1`,
      `docker://${host}/team/copy:1`,
    ]);
    const raw = (
      await run(
        'skopeo',
        [
          'inspect',
          '--raw',
          '--tls-verify=false',
          '--creds',
          `vera:${viewer}`,
          `docker://${host}/team/copy:1`,
        ],
        { encoding: 'buffer' },
      )
    ).stdout;
    const original = readFileSync(
      openImageStore(join(scratch, 'seed')).blobPath(
        (await openImageStore(join(scratch, 'seed')).resolve('team/app:1')).manifestDigest,
      ),
    );
    assert.ok(Buffer.from(raw).equals(original), 'the manifest is byte-identical after the copy');
  });
});

describe('registry tokens across server restarts', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-registry-token-restart-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it("a data dir's key signs them: two instances agree, another data dir does not, the key file is 0600", () => {
    const one = RegistryTokens.forDataDir(join(scratch, 'a'));
    const issued = one.issue(principal, ['repository:team/app:pull']);
    assert.deepEqual(RegistryTokens.forDataDir(join(scratch, 'a')).verify(issued.token)?.access, [
      { name: 'team/app', actions: ['pull'] },
    ]);
    assert.equal(RegistryTokens.forDataDir(join(scratch, 'b')).verify(issued.token), undefined);
    assert.equal(statSync(join(scratch, 'a', secretKeyFileName)).mode & 0o777, 0o600);
  });

  it('a token from /v2/token still authorizes after `berth server` restarts on the same data dir', async () => {
    const dataDir = join(scratch, 'server');
    mkdirSync(dataDir, { recursive: true });
    const options = {
      db: join(dataDir, 'bbs.sqlite3'),
      listen: '127.0.0.1:0',
      logger: false,
      dataDir,
    } as const;
    let server = await startBbsServer(options);
    let registryToken: string;
    try {
      const admin = readFileSync(adminTokenPath(dataDir), 'utf8').trim();
      const basic = Buffer.from(`any:${admin}`).toString('base64');
      const answer = await fetch(`${server.url}/v2/token?service=berth&scope=repository:team/app:pull`, {
        headers: { authorization: `Basic ${basic}` },
      });
      assert.equal(answer.status, 200);
      registryToken = ((await answer.json()) as { token: string }).token;
    } finally {
      await server.close();
    }
    server = await startBbsServer(options);
    try {
      const tags = await fetch(`${server.url}/v2/team/app/tags/list`, {
        headers: { authorization: `Bearer ${registryToken}` },
      });
      assert.notEqual(tags.status, 401, 'the restarted server accepts the token');
      assert.equal(tags.status, 404, 'and answers the registry (the repository is unknown)');
      const other = await fetch(`${server.url}/v2/team/other/tags/list`, {
        headers: { authorization: `Bearer ${registryToken}` },
      });
      assert.equal(other.status, 401, 'still scoped to its repository');
    } finally {
      await server.close();
    }
  });
});
