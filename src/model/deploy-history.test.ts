import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openBbsStore } from '../bbs/index.js';
import { runMigrations } from '../db/index.js';
import { definitionDigest, openSecrets, sealDefinition, secretNames } from './definition-secrets.js';
import { type DeployRecord, listDeployHistory, pickRollbackTarget } from './deploy-history.js';
import { SecretBox } from './secret-box.js';
import { modelMigrationList } from './sql-model-schema.js';
import { modelWrite } from './sql-model-txn-runner.js';
import { InvalidDefinitionError } from './system-definition.js';
import { parseSystemDefinition } from './system-definition-yaml.js';

function record(
  id: string,
  state: string,
  digest: string | null,
  kind: DeployRecord['kind'] = 'deploy',
): DeployRecord {
  return {
    id,
    kind,
    path: '/',
    state,
    reason: '',
    user: 'ann',
    digest,
    rollback_of: null,
    created_at: '',
    finished_at: null,
    secrets: {},
  };
}

describe('pickRollbackTarget (newest first)', () => {
  it('after v1, v2: v1; after a failed v2: v1 too', () => {
    assert.equal(
      pickRollbackTarget([record('d2', 'succeeded', 'B'), record('d1', 'succeeded', 'A')]).id,
      'd1',
    );
    assert.equal(pickRollbackTarget([record('d2', 'failed', 'B'), record('d1', 'succeeded', 'A')]).id, 'd1');
  });
  it('skips failed deploys, teardowns and deploys of the same definition as the current one', () => {
    const history = [
      record('d5', 'succeeded', 'B'),
      record('t1', 'succeeded', null, 'teardown'),
      record('d4', 'succeeded', 'B'),
      record('d3', 'failed', 'C'),
      record('d2', 'succeeded', 'A'),
    ];
    assert.equal(pickRollbackTarget(history).id, 'd2');
  });
  it('nothing to go back to is refused with what to do instead', () => {
    assert.throws(() => pickRollbackTarget([record('d1', 'succeeded', 'A')]), /no earlier succeeded deploy/);
    assert.throws(() => pickRollbackTarget([]), /no earlier succeeded deploy/);
  });
  it('a named deploy: any finished one of the system with a readable definition', () => {
    const history = [
      record('d2', 'in_progress', 'B'),
      record('d1', 'failed', 'A'),
      record('t', 'succeeded', null, 'teardown'),
    ];
    assert.equal(pickRollbackTarget(history, 'd1').id, 'd1');
    assert.throws(() => pickRollbackTarget(history, 'd2'), /has not ended \(in_progress\)/);
    assert.throws(() => pickRollbackTarget(history, 't'), /Cannot find deploy/);
    assert.throws(() => pickRollbackTarget(history, 'nope'), /Cannot find deploy/);
  });
});

describe('definition secrets', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-def-secrets-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const box = SecretBox.forDataDir(dir);
  const withValue = (value: string) =>
    parseSystemDefinition(
      `system: s\nservices:\n  /db:\n    image: b\n    secrets: {PW: {value: "${value}"}}\n  /web: {image: b}\n`,
    );

  it('seals every value; the stored form holds no value; the container side opens it', () => {
    const sealed = sealDefinition(withValue('s3cret-value'), box);
    assert.ok(!JSON.stringify(sealed).includes('s3cret-value'));
    assert.deepEqual(openSecrets(sealed.services[0]!, box), { PW: 's3cret-value' });
    assert.deepEqual(openSecrets(sealed.services[1]!, box), {});
    assert.deepEqual(secretNames(sealed), { '/db': ['PW'] });
  });

  it('the digest is the same for the same file (values sealed anew) and differs when a value does', () => {
    const a = definitionDigest(sealDefinition(withValue('one'), box));
    assert.equal(a, definitionDigest(sealDefinition(withValue('one'), box)));
    assert.notEqual(a, definitionDigest(sealDefinition(withValue('two'), box)));
    assert.match(a, /^[0-9a-f]{64}$/);
  });

  it('refuses a file reference, a client-sealed secret, or secrets on a server without a key', () => {
    const file = parseSystemDefinition(
      'system: s\nservices:\n  /db: {image: b, secrets: {PW: {file: ./pw}}}\n',
    );
    assert.throws(() => sealDefinition(file, box), /does not read files/);
    const replay = { ...file, services: [{ ...file.services[0]!, secrets: { PW: box.seal('PW', 'x') } }] };
    assert.throws(() => sealDefinition(replay, box), /only from a stored deploy/);
    assert.throws(() => sealDefinition(withValue('v'), undefined), InvalidDefinitionError);
    const noSecrets = parseSystemDefinition('system: s\nservices:\n  /db: {image: b}\n');
    assert.deepEqual(sealDefinition(noSecrets, undefined), noSecrets);
  });
});

describe('deploy history on a database from before its migrations (2 and 3)', () => {
  it('lists the actions it already had, with no user, after migrations 2 and 3 add the columns', async () => {
    const store = await openBbsStore(':memory:');
    try {
      const first = { ...modelMigrationList, migrations: modelMigrationList.migrations.slice(0, 1) };
      await runMigrations(store.backend, [first], new Date());
      const definition = parseSystemDefinition('system: old\nservices:\n  /web: {image: b}\n');
      const at = '2026-01-01T00:00:00.000Z';
      // The row as berth wrote it then: without principal and rollback_of.
      await modelWrite(store.backend, (db) =>
        db
          .insertInto('model_actions')
          .values({
            id: 'd-old',
            system: 'old',
            kind: 'deploy',
            path: '/',
            state: 'succeeded',
            reason: '',
            definition: JSON.stringify(definition),
            owner: 'gone',
            heartbeat_at: at,
            created_at: at,
            updated_at: at,
            finished_at: at,
            log: '[]',
          } as never)
          .execute(),
      );
      assert.deepEqual(await runMigrations(store.backend, [modelMigrationList], new Date()), {
        model: [2, 3],
      });
      const [old] = await listDeployHistory(store.backend, 'old');
      assert.equal(old?.id, 'd-old');
      assert.equal(old?.user, '');
      assert.equal(old?.rollback_of, null);
      assert.equal(old?.digest, definitionDigest(definition));
      await assert.rejects(listDeployHistory(store.backend, 'never'), /Cannot find system/);
    } finally {
      await store.close();
    }
  });
});
