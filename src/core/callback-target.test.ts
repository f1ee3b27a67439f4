import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkCallbackUrl, privateAddressKind, refusedCallbackTarget } from './callback-target.js';

describe('callback targets (SSRF)', () => {
  it('knows loopback, link-local and unspecified addresses, in IPv4, IPv6 and IPv4-mapped form', () => {
    const cases: ReadonlyArray<[string, string | undefined]> = [
      ['127.0.0.1', 'loopback'],
      ['127.255.3.4', 'loopback'],
      ['::1', 'loopback'],
      ['0:0:0:0:0:0:0:1', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['169.254.169.254', 'link-local'],
      ['fe80::1', 'link-local'],
      ['febf::1', 'link-local'],
      ['::ffff:169.254.0.1', 'link-local'],
      ['0.0.0.0', 'unspecified'],
      ['::', 'unspecified'],
      ['10.0.0.1', undefined],
      ['192.168.1.1', undefined],
      ['2001:db8::1', undefined],
      ['fec0::1', undefined],
      ['128.0.0.1', undefined],
    ];
    for (const [address, kind] of cases) assert.equal(privateAddressKind(address), kind, address);
  });

  it('refuses such a URL at creation with an error naming the field, unless allowed', () => {
    for (const url of [
      'http://127.0.0.1:8889/v1/x',
      'http://localhost/cb',
      'http://LOCALHOST./cb',
      'http://api.localhost/cb',
      'http://[::1]:7777/',
      'http://169.254.169.254/latest/meta-data',
      'https://[fe80::1]/',
      'http://0.0.0.0:1/',
      'http://2130706433/',
    ]) {
      assert.throws(
        () => checkCallbackUrl(url, 'completion_callback_url', { allowPrivate: false }),
        (err: Error & { code?: string; details?: Record<string, unknown> }) => {
          assert.equal(err.code, 'invalid_argument', url);
          assert.equal(err.details?.field, 'completion_callback_url');
          assert.match(err.message, /allow-private-callbacks/);
          return true;
        },
        url,
      );
      checkCallbackUrl(url, 'completion_callback_url', { allowPrivate: true });
    }
    checkCallbackUrl('https://hooks.example.com/cb', 'url', { allowPrivate: false });
    assert.throws(() => checkCallbackUrl('ftp://x/', 'url', { allowPrivate: true }), /http\(s\) URL/);
  });

  it('refuses at delivery a host that resolves to a private address, after DNS', async () => {
    const resolver = (answers: readonly string[]) => async () => answers;
    assert.match(
      (await refusedCallbackTarget(
        'http://hooks.test/cb',
        { allowPrivate: false },
        resolver(['127.0.0.1']),
      )) ?? '',
      /^refused: hooks\.test resolves to 127\.0\.0\.1, a loopback address/,
    );
    // Any private answer among several is enough: the connection could pick it.
    assert.match(
      (await refusedCallbackTarget(
        'http://hooks.test/cb',
        { allowPrivate: false },
        resolver(['93.184.215.14', 'fe80::2']),
      )) ?? '',
      /link-local/,
    );
    assert.equal(
      await refusedCallbackTarget(
        'http://hooks.test/cb',
        { allowPrivate: false },
        resolver(['93.184.215.14']),
      ),
      undefined,
    );
    assert.equal(
      await refusedCallbackTarget('http://hooks.test/cb', { allowPrivate: true }, resolver(['127.0.0.1'])),
      undefined,
    );
    // A name that does not resolve is the request's to fail (and retry), not a refusal.
    const failing = async () => {
      throw new Error('ENOTFOUND');
    };
    assert.equal(
      await refusedCallbackTarget('http://nowhere.test/', { allowPrivate: false }, failing),
      undefined,
    );
  });
});
