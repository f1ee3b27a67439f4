import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { SecretBox, secretKeyFileName } from './secret-box.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-secret-box-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('SecretBox (AES-256-GCM, one key per data dir)', () => {
  it('creates its key file 0600 on first use and reuses it', () => {
    const keyDir = join(dir, 'a');
    const box = SecretBox.forDataDir(keyDir);
    const path = join(keyDir, secretKeyFileName);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(readFileSync(path).length, 32);
    const sealed = box.seal('DB_PASSWORD', 'hunter2');
    assert.equal(SecretBox.forDataDir(keyDir).open('DB_PASSWORD', sealed), 'hunter2', 'same key next start');
  });

  it('seals to ciphertext only: a new IV each time, the same keyed digest for the same value', () => {
    const box = SecretBox.forDataDir(join(dir, 'b'));
    const a = box.seal('PW', 'correct horse');
    const b = box.seal('PW', 'correct horse');
    assert.notEqual(a.sealed, b.sealed);
    assert.equal(a.digest, b.digest);
    assert.notEqual(a.digest, box.seal('PW', 'other').digest);
    assert.notEqual(a.digest, box.seal('PW2', 'correct horse').digest, 'the name is part of the digest');
    for (const s of [a.sealed, a.digest]) assert.ok(!s.includes('correct horse'));
    assert.ok(!Buffer.from(a.sealed.slice(3), 'base64').toString('latin1').includes('correct horse'));
  });

  it('refuses another key, another name or a damaged ciphertext, without echoing anything', () => {
    const box = SecretBox.forDataDir(join(dir, 'c'));
    const other = SecretBox.forDataDir(join(dir, 'd'));
    const s = box.seal('PW', 'value-123');
    assert.throws(() => other.open('PW', s), /another key/);
    assert.throws(() => box.open('OTHER', s), /another key/);
    const raw = Buffer.from(s.sealed.slice(3), 'base64');
    raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
    assert.throws(() => box.open('PW', { ...s, sealed: `v1:${raw.toString('base64')}` }), /damaged/);
    assert.throws(() => box.open('PW', { ...s, sealed: 'v9:xx' }), /not sealed in a form/);
  });

  it('tightens a key file copied in with a loose mode; refuses a key of the wrong size', () => {
    const keyDir = join(dir, 'e');
    SecretBox.forDataDir(keyDir);
    const path = join(keyDir, secretKeyFileName);
    chmodSync(path, 0o644);
    SecretBox.forDataDir(keyDir);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.throws(() => new SecretBox(Buffer.alloc(16)), /32 bytes/);
  });
});
