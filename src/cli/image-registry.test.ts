import assert from 'node:assert/strict';
import { type ChildProcess, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runBerth, spawnBerth } from '../testing/berth-cli.js';
import { makeBusyboxRootfs } from '../testing/busybox-rootfs.js';

const canRun = process.getuid?.() === 0 ? false : 'runc needs root';

/** Starts `berth server` as its own process and waits for the URL it prints first. */
function startServer(dir: string): Promise<{ child: ChildProcess; url: string }> {
  mkdirSync(dir, { recursive: true });
  const child = spawnBerth(['server', '--listen', '127.0.0.1:0', '--dir', dir]);
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr?.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const line = /^(http:\/\/\S+)\n/.exec(out);
      if (line?.[1]) resolve({ child, url: line[1] });
    });
    child.once('exit', (code) => reject(new Error(`berth server exited with ${code}: ${err}`)));
  });
}

/**
 * The registry end to end through real processes: `berth server` (tokens on, as it runs by
 * default), `berth image push` from one data dir, `berth image pull` into another, and the pulled
 * image run by runc.
 */
describe('berth image push|pull against berth server', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-cli-registry-'));
  const serverDir = join(scratch, 'server');
  const from = join(scratch, 'from');
  const to = join(scratch, 'to');
  let server: ChildProcess | undefined;
  let url = '';
  let token = '';
  let id = '';

  before(async () => {
    ({ child: server, url } = await startServer(serverDir));
    token = readFileSync(join(serverDir, 'admin.token'), 'utf8').trim();
    const rootfs = makeBusyboxRootfs(join(scratch, 'rootfs'));
    const imported = await runBerth([
      'image',
      'import-rootfs',
      rootfs,
      '--name',
      'tools/busybox:1',
      '--dir',
      from,
    ]);
    assert.equal(imported.code, 0, imported.stderr);
    id = imported.stdout.trim();
  });
  after(() => {
    server?.kill('SIGTERM');
    rmSync(scratch, { recursive: true, force: true });
  });

  it('push without a token is refused (exit 5, unauthenticated)', async () => {
    const r = await runBerth(['image', 'push', 'tools/busybox:1', '--server', url, '--dir', from], {
      BERTH_TOKEN: '',
    });
    assert.equal(r.code, 5, r.stderr);
    assert.match(r.stderr, /401/);
  });

  it('push prints the manifest digest; a second push sends no blobs', async () => {
    const r = await runBerth(['image', 'push', 'tools/busybox:1', '--server', url, '--dir', from], {
      BERTH_TOKEN: token,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^sha256:[a-f0-9]{64}\n$/);
    assert.match(r.stderr, /2 blobs .* sent, 0 already there/);
    const again = await runBerth(['image', 'push', 'tools/busybox:1', '--server', url, '--dir', from], {
      BERTH_TOKEN: token,
    });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /0 blobs .* sent, 2 already there/);
    const list = await runBerth(['image', 'list', '--format', 'json', '--dir', serverDir]);
    assert.deepEqual(
      (JSON.parse(list.stdout) as { names: string[] }[]).flatMap((i) => i.names),
      ['tools/busybox:1'],
    );
  });

  it('pull into another data dir prints the same image id; an unknown image is exit 3', async () => {
    const r = await runBerth(['image', 'pull', 'tools/busybox:1', '--dir', to], {
      BERTH_TOKEN: token,
      BERTH_SERVER: url,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${id}\n`);
    const missing = await runBerth(['image', 'pull', 'tools/nothing:1', '--server', url, '--dir', to], {
      BERTH_TOKEN: token,
    });
    assert.equal(missing.code, 3, missing.stderr);
  });

  it('the pulled image runs', { skip: canRun }, async () => {
    const r = await runBerth([
      'run',
      '--rm',
      '--dir',
      to,
      'tools/busybox:1',
      '--',
      'sh',
      '-c',
      'echo pulled',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'pulled\n');
  });

  it('prune keeps what images reference', async () => {
    const r = await runBerth(['image', 'prune', '--grace', '0s', '--dir', to]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Deleted 0 blobs/);
    const check = await runBerth(['run', '--rm', '--dir', to, 'tools/busybox:1', '--', 'true']);
    if (canRun === false) assert.equal(check.code, 0, check.stderr);
    assert.ok(existsSync(join(to, 'images')));
  });

  it('skopeo and podman log in with a berth token as password, copy and pull; a viewer token cannot push', async () => {
    const host = url.replace(/^http:\/\//, '');
    const authfile = join(scratch, 'auth.json');
    const tool = (cmd: string, args: string[]) => {
      const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000 });
      return { code: r.status, out: `${r.stdout}${r.stderr}` };
    };
    const login = (cmd: string, file: string, user: string, password: string) =>
      tool(cmd, ['login', '--tls-verify=false', '--authfile', file, '-u', user, '-p', password, host]);
    const copy = (file: string, from: string, to: string) =>
      tool('skopeo', [
        'copy',
        '--authfile',
        file,
        '--src-tls-verify=false',
        '--dest-tls-verify=false',
        `docker://${host}/${from}`,
        `docker://${host}/${to}`,
      ]);
    // A 401 without credentials carries the challenge registry clients need.
    const challenge = await fetch(`${url}/v2/`);
    assert.equal(challenge.status, 401);
    // The distribution token flow: where to get a token, for which service (docs/auth.md).
    assert.equal(challenge.headers.get('www-authenticate'), `Bearer realm="${url}/v2/token",service="berth"`);
    assert.equal(
      ((await challenge.json()) as { errors: { code: string }[] }).errors[0]?.code,
      'UNAUTHORIZED',
    );

    const bad = login('skopeo', authfile, 'me', 'nope');
    assert.notEqual(bad.code, 0, 'a wrong token is refused at login');
    const loggedIn = login('skopeo', authfile, 'me', token);
    assert.equal(loggedIn.code, 0, loggedIn.out);
    const copied = copy(authfile, 'tools/busybox:1', 'copied/busybox:2');
    assert.equal(copied.code, 0, copied.out);
    const list = await runBerth(['image', 'list', '--format', 'json', '--dir', serverDir]);
    assert.ok(
      (JSON.parse(list.stdout) as { names: string[] }[]).some((i) => i.names.includes('copied/busybox:2')),
      list.stdout,
    );

    const created = await runBerth(
      ['token', 'create', '--role', 'viewer', '--name', 'puller', '--server', url],
      {
        BERTH_TOKEN: token,
      },
    );
    assert.equal(created.code, 0, created.stderr);
    const viewerAuth = join(scratch, 'viewer-auth.json');
    const viewer = login('skopeo', viewerAuth, 'puller', created.stdout.trim());
    assert.equal(viewer.code, 0, viewer.out);
    const denied = copy(viewerAuth, 'tools/busybox:1', 'viewer/busybox:1');
    assert.notEqual(denied.code, 0);
    assert.match(denied.out, /denied|403|not allowed/i);
    const inspect = tool('skopeo', [
      'inspect',
      '--authfile',
      viewerAuth,
      '--tls-verify=false',
      `docker://${host}/copied/busybox:2`,
    ]);
    assert.equal(inspect.code, 0, `a viewer pulls: ${inspect.out}`);

    const podmanAuth = join(scratch, 'podman-auth.json');
    const plogin = login('podman', podmanAuth, 'me', token);
    assert.equal(plogin.code, 0, plogin.out);
    const storage = join(scratch, 'podman');
    const pull = tool('podman', [
      '--root',
      join(storage, 'root'),
      '--runroot',
      join(storage, 'run'),
      '--storage-driver',
      'vfs',
      'pull',
      '--tls-verify=false',
      '--authfile',
      podmanAuth,
      `${host}/copied/busybox:2`,
    ]);
    assert.equal(pull.code, 0, pull.out);
  });
});
