import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { definitionWithSecretFiles } from './secret-files.js';

describe('berth deploy reads secret files relative to the definition', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-secret-files-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'conf'));
  writeFileSync(join(dir, 'conf', 'pw'), 'top-secret\n');
  const definitionFile = join(dir, 'conf', 'shop.yaml');

  it('replaces each {file} by {value: its content}, one trailing newline dropped', () => {
    const text =
      'system: shop\nservices:\n  /db:\n    image: b\n    env: {A: "1"}\n    secrets: {PW: {file: ./pw}}\n  /web: {image: b}\n';
    assert.deepEqual(definitionWithSecretFiles(text, definitionFile), {
      system: 'shop',
      services: {
        '/db': { image: 'b', env: { A: '1' }, secrets: { PW: { value: 'top-secret' } } },
        '/web': { image: 'b' },
      },
    });
  });

  it('sends the text as it is when there is nothing to read (or it does not parse: the server says why)', () => {
    const plain = 'system: shop\nservices:\n  /web: {image: b}\n';
    assert.equal(definitionWithSecretFiles(plain, definitionFile), plain);
    const broken = 'system: shop\nservices: [\n';
    assert.equal(definitionWithSecretFiles(broken, definitionFile), broken);
  });

  it('a file it cannot read is refused naming the secret and the file', () => {
    const text = 'system: shop\nservices:\n  /db: {image: b, secrets: {PW: {file: ../missing}}}\n';
    assert.throws(
      () => definitionWithSecretFiles(text, definitionFile),
      (err: Error) => /secret PW of \/db from .*\/missing: ENOENT/.test(err.message),
    );
  });
});
