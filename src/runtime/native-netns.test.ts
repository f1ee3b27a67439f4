import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { nativeAddon } from './native-addon.js';

/** The addon's named network namespaces against the real kernel, checked with iproute2. */
const dir = mkdtempSync(join(tmpdir(), 'berth-netns-'));
after(() => {
  spawnSync('umount', ['-R', '-l', dir]);
  rmSync(dir, { recursive: true, force: true });
});

describe('createNetns / deleteNetns', () => {
  it('make a namespace of its own, with only lo (up), without moving this process', () => {
    const before = readlinkSync('/proc/self/ns/net');
    nativeAddon().createNetns(dir, 'one');
    const path = join(dir, 'one');
    assert.equal(readlinkSync('/proc/self/ns/net'), before, "node's namespace is unchanged");
    const links = spawnSync('nsenter', [`--net=${path}`, 'ip', '-o', 'link'], { encoding: 'utf8' });
    assert.equal(links.status, 0, links.stderr);
    assert.deepEqual(
      links.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(':')[1]?.trim()),
      ['lo'],
    );
    // Up, so 127.0.0.1 answers in a pod on this namespace (a new namespace's lo is down).
    assert.match(links.stdout, /<LOOPBACK,UP,LOWER_UP>/);
    const ping = spawnSync(
      'nsenter',
      [`--net=${path}`, 'busybox', 'ping', '-c', '1', '-W', '1', '127.0.0.1'],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(ping.status, 0, `127.0.0.1 answers: ${ping.stdout}${ping.stderr}`);
    const inside = spawnSync('nsenter', [`--net=${path}`, 'readlink', '/proc/self/ns/net'], {
      encoding: 'utf8',
    });
    assert.notEqual(inside.stdout.trim(), before);
    // The dir propagates mounts, as `ip netns` leaves /run/netns.
    const line = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .find((l) => l.split(' ')[4] === dir);
    assert.match(line ?? '', /shared:\d+/);

    assert.throws(() => nativeAddon().createNetns(dir, 'one'), { code: 'EEXIST' });
    nativeAddon().deleteNetns(path);
    assert.equal(existsSync(path), false);
    nativeAddon().deleteNetns(path); // gone already: no error
  });

  it('refuses a name with a slash and a missing argument', () => {
    assert.throws(() => nativeAddon().createNetns(dir, '../escape'), TypeError);
    assert.throws(() => nativeAddon().createNetns(dir, ''), TypeError);
  });
});
