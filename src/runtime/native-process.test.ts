import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { nativeAddon } from './native-addon.js';
import { endStdin, randomUuid, spawnNative } from './native-process.js';

/** Child processes through berth's addon (posix_spawn + pidfd), against the real kernel. */
const dir = mkdtempSync(join(tmpdir(), 'berth-native-process-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function collect(socket: Socket | undefined): Promise<string> {
  assert.ok(socket, 'a piped fd gives a socket');
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    text += chunk;
  });
  return new Promise((resolve) => socket.once('close', () => resolve(text)));
}

const ownFds = (): string[] => readdirSync('/proc/self/fd');

describe('spawnNative', () => {
  it('pipes stdin, stdout and stderr and reports the exit code', async () => {
    const child = spawnNative('sh', ['-c', 'read line; echo "out $line"; echo err >&2; exit 7'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    assert.ok(child.pid > 0);
    const [stdout, stderr] = [collect(child.pipes.get(1)), collect(child.pipes.get(2))];
    assert.ok(child.stdin !== undefined);
    endStdin(child.stdin, 'hello\n');
    assert.deepEqual(await child.exited, { code: 7, signal: null });
    assert.equal(await stdout, 'out hello\n');
    assert.equal(await stderr, 'err\n');
  });

  it('reports the signal that killed a child, by number', async () => {
    const child = spawnNative('sleep', ['30'], { stdio: ['null', 'null', 'null'] });
    process.kill(child.pid, 'SIGTERM');
    assert.deepEqual(await child.exited, { code: null, signal: 15 });
  });

  it('starts a new session, with every signal at its default and none blocked', async () => {
    const child = spawnNative(
      'sh',
      ['-c', 'cut -d" " -f6 /proc/self/stat; grep -E "^Sig(Blk|Ign)" /proc/self/status'],
      { stdio: ['null', 'pipe', 2], newSession: true },
    );
    const out = await collect(child.pipes.get(1));
    await child.exited;
    const [session, blocked, ignored] = out.trim().split('\n');
    // cut is the session leader's child: its session is the shell's pid, the one spawned.
    assert.equal(Number(session), child.pid);
    assert.match(blocked ?? '', /^SigBlk:\s+0+$/);
    // Node ignores SIGPIPE and SIGXFSZ; the child must not. (glibc's posix_spawn leaves its own two
    // internal signals, 32 and 33, ignored in every child it starts: above the mask's low 31 bits.)
    const mask = BigInt(`0x${(ignored ?? '').replace(/^SigIgn:\s+/, '')}`);
    assert.equal(mask & 0x7fffffffn, 0n, `no standard signal ignored: ${ignored}`);
  });

  it('gives the child exactly the fds it names, an fd that is its own target included', () => {
    // In a node of its own, whose fd 3 is then a close-on-exec file (as stage 1's lock fd can be
    // fd 3 in the holder), and whose fd 4 is inherited without close-on-exec and not passed on.
    const file = join(dir, 'content');
    writeFileSync(file, 'through fd 3\n');
    const script = `
      const fs = await import('node:fs');
      fs.closeSync(3);
      const fd = fs.openSync(${JSON.stringify(file)}, 'r');
      if (fd !== 3) throw new Error('expected fd 3, got ' + fd);
      const { spawnNative } = await import(${JSON.stringify(new URL('./native-process.js', import.meta.url).href)});
      const child = spawnNative('sh', ['-c', 'cat <&3; ls /proc/self/fd | sort -n | tr "\\\\n" " "'], { stdio: ['null', 1, 2, fd] });
      const end = await child.exited;
      process.exitCode = end.code;
    `;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
      encoding: 'utf8',
    });
    assert.equal(result.status, 0, result.stderr);
    const [content, fds] = result.stdout.split('\n');
    assert.equal(content, 'through fd 3');
    // 0–3, then ls's own directory fd as the lowest free one: 4 only if the inherited 4 was closed.
    assert.deepEqual(fds?.trim().split(' '), ['0', '1', '2', '3', '4']);
  });

  it("an 'unref' watch does not keep node running; a 'ref' one waits for the child", () => {
    const script = (watch: string) => `
      const { spawnNative } = await import(${JSON.stringify(new URL('./native-process.js', import.meta.url).href)});
      const child = spawnNative('sleep', ['${watch === 'ref' ? '0.2' : '30'}'], { stdio: ['null', 'null', 'null'], watch: '${watch}' });
      child.exited.then((end) => console.log('ended', end.code));
      console.log(child.pid);
    `;
    const unref = spawnSync(process.execPath, ['--input-type=module', '-e', script('unref')], {
      encoding: 'utf8',
    });
    assert.equal(unref.status, 0, unref.stderr);
    const pid = Number(unref.stdout.trim());
    assert.doesNotThrow(() => process.kill(pid, 0), 'node exited while its child still runs');
    process.kill(pid, 'SIGKILL');
    const ref = spawnSync(process.execPath, ['--input-type=module', '-e', script('ref')], {
      encoding: 'utf8',
    });
    assert.equal(ref.status, 0, ref.stderr);
    assert.match(ref.stdout, /^\d+\nended 0\n$/, 'node stayed until the child ended and reported it');
  });

  it('an exception thrown by an exit callback is uncaught, as from any node callback, not lost', () => {
    const script = `
      const { nativeAddon } = await import(${JSON.stringify(new URL('./native-addon.js', import.meta.url).href)});
      const pid = nativeAddon().spawnProcess('true', ['true'], [], [-1, -1, -1], false);
      nativeAddon().watchExit(pid, () => { throw new Error('thrown from the exit callback'); });
    `;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.notEqual(result.status, 0);
    assert.match(result.stderr, /thrown from the exit callback/);
  });

  it('a program that does not exist is ENOENT, with nothing left open', () => {
    const before = ownFds().length;
    assert.throws(() => spawnNative('berth-no-such-program', [], { stdio: ['pipe', 'pipe', 'pipe'] }), {
      code: 'ENOENT',
      message: /spawn 'berth-no-such-program'/,
    });
    assert.equal(ownFds().length, before);
  });

  it('bad arguments are TypeErrors naming the call', () => {
    const addon = nativeAddon();
    assert.throws(() => addon.spawnProcess('', [], [], [], false), /spawnProcess\(file, args/);
    assert.throws(() => addon.spawnProcess('sh', ['a\0b'], [], [], false), TypeError);
    assert.throws(() => addon.spawnProcess('sh', ['sh'], [], new Array(17).fill(-1), false), TypeError);
    assert.throws(() => addon.spawnProcess('sh', ['sh'], [], [987654], false), { code: 'EBADF' });
    assert.throws(() => addon.watchExit(0, () => {}), /watchExit\(pid, callback, keepAlive\)/);
    assert.throws(() => addon.watchExit(process.pid, () => {}), { code: 'ECHILD' });
  });
});

describe('randomUuid', () => {
  it('makes version 4 UUIDs, each different', () => {
    const uuids = new Set(Array.from({ length: 1000 }, randomUuid));
    assert.equal(uuids.size, 1000);
    for (const uuid of uuids)
      assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
