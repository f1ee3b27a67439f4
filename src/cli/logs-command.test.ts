import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { PodStore } from '../runtime/pod-store.js';
import { formatLogLine, logsTarget } from './logs-command.js';

/** The one rule of `berth logs NAME` (docs/logs-and-exec.md): a pod on this machine or a cluster app. */
describe('berth logs: a local pod or a cluster app', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-logs-rule-'));
  const { uuid, lockFd } = new PodStore(dir).createPreparing();
  closeSync(lockFd);
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a pod of the data dir (UUID or prefix) is local', () => {
    assert.equal(logsTarget({ dir }, uuid), 'pod');
    assert.equal(logsTarget({ dir }, uuid.slice(0, 8)), 'pod');
  });

  it('--server, --task or a / make it a cluster app, whatever the name', () => {
    assert.equal(logsTarget({ dir, server: 'http://127.0.0.1:8889' }, uuid), 'cluster');
    assert.equal(logsTarget({ dir, task: 'job-1' }, undefined), 'cluster');
    assert.equal(logsTarget({ dir }, 'shop/web'), 'cluster');
  });

  it('a name that is no pod here is a cluster app, also with no data dir at all', () => {
    assert.equal(logsTarget({ dir }, 'web'), 'cluster');
    assert.equal(logsTarget({ dir: join(dir, 'missing') }, 'web'), 'cluster');
  });

  it('no name and no --task is an error that says what to name', () => {
    assert.throws(() => logsTarget({ dir }, undefined), /a pod, an APP, SYSTEM\/SERVICE, or --task GUID/);
  });

  it('lines read [APP/INDEX] line, with --timestamps the time first', () => {
    const line = { ts: '2026-11-25T15:00:00.000Z', source: 'web/1', line: 'hello' };
    assert.equal(formatLogLine(line, false), '[web/1] hello\n');
    assert.equal(formatLogLine(line, true), '2026-11-25T15:00:00.000Z [web/1] hello\n');
    assert.equal(formatLogLine({ ...line, error: 'gone' }, false), '[web/1] (cannot read: gone)\n');
  });
});
