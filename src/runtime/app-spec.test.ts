import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import { defaultPath, resolveArgs, resolveEnv, resolveWorkdir } from './app-spec.js';
import { resolveUser } from './user-spec.js';

describe('argv as podman computes it', () => {
  const image = { Entrypoint: ['/entry'], Cmd: ['--default'] };
  const cases: ReadonlyArray<
    [string, Parameters<typeof resolveArgs>[0], Parameters<typeof resolveArgs>[1], string[]]
  > = [
    ['image Entrypoint + Cmd', image, {}, ['/entry', '--default']],
    ['ARGS replace Cmd', image, { args: ['x', 'y'] }, ['/entry', 'x', 'y']],
    ['--entrypoint replaces Entrypoint and drops Cmd', image, { entrypoint: '/other' }, ['/other']],
    ['--entrypoint with ARGS', image, { entrypoint: '/other', args: ['a'] }, ['/other', 'a']],
    [
      '--entrypoint as a JSON array',
      image,
      { entrypoint: '["/bin/sh","-c"]', args: ['echo'] },
      ['/bin/sh', '-c', 'echo'],
    ],
    [
      '--entrypoint "" clears it, ARGS run alone',
      image,
      { entrypoint: '', args: ['/bin/true'] },
      ['/bin/true'],
    ],
    ['Cmd only', { Cmd: ['/bin/sh'] }, {}, ['/bin/sh']],
    [
      'command replaces both (tasks, LRPs)',
      image,
      { command: ['/bin/echo', 'hi'], args: ['ignored'] },
      ['/bin/echo', 'hi'],
    ],
  ];
  for (const [name, config, overrides, argv] of cases) {
    it(name, () => assert.deepEqual(resolveArgs(config, overrides), argv));
  }
  it('refuses an image with nothing to run, saying what to do', () => {
    assert.throws(
      () => resolveArgs({}, {}),
      (err: unknown) => err instanceof BerthError && /Entrypoint or Cmd/.test(err.message),
    );
  });
  it('refuses a malformed JSON --entrypoint', () => {
    assert.throws(() => resolveArgs(image, { entrypoint: '["/x",' }), /does not parse/);
  });
});

describe('environment as podman merges it', () => {
  const extras = { hostname: 'h1', home: '/root' };
  it('uses the default PATH when the image sets none', () => {
    const env = resolveEnv({}, {}, extras, {});
    assert.ok(env.includes(defaultPath));
    assert.ok(env.includes('HOSTNAME=h1'));
    assert.ok(env.includes('HOME=/root'));
  });
  it("the image's PATH replaces the default, --env wins over the image", () => {
    const env = resolveEnv({ Env: ['PATH=/x', 'A=1', 'B=2'] }, { env: ['B=3', 'C=4'] }, extras, {});
    assert.deepEqual(
      env.filter((e) => /^(PATH|A|B|C)=/.test(e)),
      ['PATH=/x', 'A=1', 'B=3', 'C=4'],
    );
  });
  it('--env KEY copies from the host environment, or drops it when unset', () => {
    const env = resolveEnv({}, { env: ['FROMHOST', 'MISSING'] }, extras, { FROMHOST: 'v' });
    assert.ok(env.includes('FROMHOST=v'));
    assert.ok(!env.some((e) => e.startsWith('MISSING')));
  });
  it('refuses --env without a name', () =>
    assert.throws(() => resolveEnv({}, { env: ['=x'] }, extras, {}), /no variable name/));
});

describe('working dir', () => {
  it('defaults to the image WorkingDir, then /', () => {
    assert.equal(resolveWorkdir({ WorkingDir: '/app' }, {}), '/app');
    assert.equal(resolveWorkdir({}, {}), '/');
    assert.equal(resolveWorkdir({ WorkingDir: '/app' }, { workdir: '/tmp' }), '/tmp');
  });
  it('refuses a relative --workdir', () =>
    assert.throws(() => resolveWorkdir({}, { workdir: 'rel' }), /absolute/));
});

describe('user resolution against the image /etc/passwd and /etc/group', () => {
  const root = mkdtempSync(join(tmpdir(), 'berth-user-'));
  mkdirSync(join(root, 'etc'));
  writeFileSync(
    join(root, 'etc/passwd'),
    'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n',
  );
  writeFileSync(join(root, 'etc/group'), 'root:x:0:\napp:x:1000:\nwheel:x:10:app\n');
  it('defaults to root', () =>
    assert.deepEqual(resolveUser(root, undefined), { uid: 0, gid: 0, additionalGids: [], home: '/root' }));
  it('a name takes uid, gid, home and supplementary groups', () => {
    assert.deepEqual(resolveUser(root, 'app'), {
      uid: 1000,
      gid: 1000,
      additionalGids: [10],
      home: '/home/app',
    });
  });
  it('a number need not exist (gid 0, HOME /)', () => {
    assert.deepEqual(resolveUser(root, '4242'), { uid: 4242, gid: 0, additionalGids: [], home: '/' });
  });
  it('user:group by names and numbers', () => {
    assert.equal(resolveUser(root, 'app:wheel').gid, 10);
    assert.equal(resolveUser(root, '1000:5').gid, 5);
  });
  it('refuses unknown names, naming them', () => {
    assert.throws(() => resolveUser(root, 'nobody'), /Cannot find user "nobody"/);
    assert.throws(() => resolveUser(root, 'app:nogroup'), /Cannot find group "nogroup"/);
    assert.throws(() => resolveUser(root, 'app:'), /Invalid user/);
  });
  it('never reads a host file through a symlinked /etc/passwd', () => {
    const evil = mkdtempSync(join(tmpdir(), 'berth-user-evil-'));
    mkdirSync(join(evil, 'etc'));
    symlinkSync('/etc/passwd', join(evil, 'etc/passwd'));
    // The host's root entry must not be visible: "root" is unknown inside this image.
    assert.throws(() => resolveUser(evil, 'root'), /Cannot find user "root"/);
  });
});
