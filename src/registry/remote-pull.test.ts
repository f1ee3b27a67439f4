import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import { parsePlatform, platformDescriptor } from './platform-choice.js';
import { pullSource } from './pull-source.js';
import { parseChallenge } from './registry-challenge.js';
import { RegistryClient } from './registry-client.js';
import { credentialsFromAuthFile, findCredentials } from './registry-credentials.js';
import { parseRemoteReference, registryBaseUrl } from './remote-reference.js';

const hex = (algorithm: 'sha256' | 'sha512', bytes: Buffer | string) =>
  `${algorithm}:${createHash(algorithm).update(bytes).digest('hex')}`;

describe('remote references, credentials, challenges, platforms', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'berth-remote-ref-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('a first component with a dot, a port or localhost is a registry host', () => {
    assert.deepEqual(parseRemoteReference('busybox'), {
      registry: undefined,
      repository: 'busybox',
      reference: 'latest',
      digest: undefined,
      localName: 'busybox:latest',
    });
    const d = `sha256:${'a'.repeat(64)}`;
    assert.deepEqual(parseRemoteReference(`localhost:5000/team/app@${d}`), {
      registry: 'localhost:5000',
      repository: 'team/app',
      reference: d,
      digest: d,
      localName: undefined,
    });
    const both = parseRemoteReference(`ghcr.io/o/app:v1@sha512:${'b'.repeat(128)}`);
    assert.equal(both.reference, `sha512:${'b'.repeat(128)}`);
    assert.equal(both.localName, 'ghcr.io/o/app:v1');
    assert.equal(parseRemoteReference('docker.io/busybox:1').repository, 'library/busybox');
    assert.equal(parseRemoteReference('docker.io/busybox:1').registry, 'registry-1.docker.io');
    assert.equal(parseRemoteReference('team/app:1').registry, undefined, 'no host: the berth server');
    assert.throws(() => parseRemoteReference('x@md5:abc'), /sha256:<64 hex> or sha512:<128 hex>/);
    assert.throws(() => parseRemoteReference('Bad/Name'), /Invalid image name/);
  });

  it('https unless loopback or listed insecure', () => {
    assert.equal(registryBaseUrl('127.0.0.1:5000'), 'http://127.0.0.1:5000');
    assert.equal(registryBaseUrl('localhost'), 'http://localhost');
    assert.equal(registryBaseUrl('reg.lan:5000'), 'https://reg.lan:5000');
    assert.equal(registryBaseUrl('reg.lan:5000', ['reg.lan:5000']), 'http://reg.lan:5000');
    assert.equal(registryBaseUrl('reg.lan:5000', ['reg.lan']), 'http://reg.lan:5000');
  });

  it('credentials: --creds, else the most specific auth.json entry of the usual files', () => {
    const file = join(scratch, 'auth.json');
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    writeFileSync(
      file,
      JSON.stringify({
        auths: {
          'reg.lan:5000': { auth: b64('all:one') },
          'reg.lan:5000/team': { auth: b64('team:two') },
          'https://index.docker.io/v1/': { auth: b64('hub:three') },
        },
      }),
    );
    assert.deepEqual(credentialsFromAuthFile(file, 'reg.lan:5000', 'team/app'), {
      username: 'team',
      password: 'two',
    });
    assert.deepEqual(credentialsFromAuthFile(file, 'reg.lan:5000', 'teams/app'), {
      username: 'all',
      password: 'one',
    });
    assert.deepEqual(credentialsFromAuthFile(file, 'registry-1.docker.io', 'library/busybox'), {
      username: 'hub',
      password: 'three',
    });
    assert.equal(credentialsFromAuthFile(file, 'other.lan', 'x'), undefined);
    const env = { REGISTRY_AUTH_FILE: file, HOME: scratch };
    assert.deepEqual(findCredentials('reg.lan:5000', 'x', { env }), { username: 'all', password: 'one' });
    assert.deepEqual(findCredentials('reg.lan:5000', 'x', { env, creds: 'me:p:w' }), {
      username: 'me',
      password: 'p:w',
    });
    const viaEnv = pullSource('reg.lan:5000/team/app:1', {
      serverUrl: 'http://127.0.0.1:8889',
      token: 'berth_x',
      env,
    });
    assert.equal(viaEnv.url, 'https://reg.lan:5000');
  });

  it('challenges parse as registries send them', () => {
    assert.deepEqual(
      parseChallenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/busybox:pull"',
      ),
      {
        scheme: 'bearer',
        params: {
          realm: 'https://auth.docker.io/token',
          service: 'registry.docker.io',
          scope: 'repository:library/busybox:pull',
        },
      },
    );
    assert.deepEqual(parseChallenge('Basic realm="Registry Realm"'), {
      scheme: 'basic',
      params: { realm: 'Registry Realm' },
    });
  });

  it('platforms: variants, arm64 as v8, never another platform', () => {
    const index = {
      manifests: [
        { digest: 'sha256:a', size: 1, platform: { os: 'linux', architecture: 'arm', variant: 'v6' } },
        { digest: 'sha256:b', size: 1, platform: { os: 'linux', architecture: 'arm', variant: 'v7' } },
        { digest: 'sha256:c', size: 1, platform: { os: 'linux', architecture: 'arm64', variant: 'v8' } },
      ],
    };
    assert.equal(platformDescriptor(index, parsePlatform('linux/arm/v7'))?.digest, 'sha256:b');
    assert.equal(platformDescriptor(index, parsePlatform('linux/arm64'))?.digest, 'sha256:c');
    assert.equal(platformDescriptor(index, parsePlatform('linux/amd64')), undefined);
    assert.throws(() => parsePlatform('linux'), /expected OS\/ARCH\[\/VARIANT\]/);
  });
});

/**
 * A registry that lies: a Basic challenge before anything, then a manifest served under a sha512
 * digest and a blob whose bytes are not what its digest says. The client answers the challenge
 * with the user's credentials and verifies everything it is given.
 */
describe('RegistryClient against a hostile registry', () => {
  let server: Server;
  let url = '';
  const manifest = Buffer.from('{"schemaVersion":2}');
  const sha512 = hex('sha512', manifest);
  const blob = Buffer.from('the real bytes');
  const blobDigest = hex('sha256', blob);
  let authorized = 0;

  before(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.headers.authorization !== `Basic ${Buffer.from('me:secret').toString('base64')}`) {
        res.writeHead(401, { 'www-authenticate': 'Basic realm="test"' }).end();
        return;
      }
      authorized += 1;
      if (req.url === `/v2/app/manifests/${sha512}` || req.url === '/v2/app/manifests/lying') {
        const body = req.url.endsWith('lying') ? Buffer.from('{"schemaVersion":3}') : manifest;
        res.writeHead(200, {
          'content-type': 'application/vnd.oci.image.manifest.v1+json',
          'docker-content-digest': sha512,
        });
        res.end(body);
        return;
      }
      if (req.url === `/v2/app/blobs/${blobDigest}`) {
        res.writeHead(200).end(Buffer.from('tampered bytes'));
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers Basic with the credentials; without them says how to give them', async () => {
    const anonymous = new RegistryClient({ serverUrl: url });
    await assert.rejects(anonymous.getManifest('app', sha512), /--creds USER:PASS/);
    const client = new RegistryClient({
      serverUrl: url,
      credentials: { username: 'me', password: 'secret' },
    });
    const fetched = await client.getManifest('app', sha512);
    assert.equal(fetched.digest, sha512, 'a sha512 manifest is verified with sha512');
    assert.ok(authorized >= 1);
  });

  it('refuses a manifest and a blob whose bytes do not match their digest', async () => {
    const client = new RegistryClient({
      serverUrl: url,
      credentials: { username: 'me', password: 'secret' },
    });
    await assert.rejects(client.getManifest('app', 'lying'), /has digest sha512:[a-f0-9]{128}, not sha512:/);
    const stream = await client.getBlob('app', blobDigest, blob.length);
    await assert.rejects(text(stream), /arrived as 14 bytes hashing to sha256:/);
  });
});
