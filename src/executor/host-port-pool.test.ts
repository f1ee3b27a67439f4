import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import { HostPortPool } from './host-port-pool.js';

describe('HostPortPool', () => {
  it('hands out the lowest free ports and takes back what is released', () => {
    const pool = new HostPortPool({ from: 100, to: 103 });
    const web = pool.take([8080, 9090]);
    assert.deepEqual(web, [
      { container_port: 8080, host_port: 100 },
      { container_port: 9090, host_port: 101 },
    ]);
    assert.deepEqual(pool.take([80]), [{ container_port: 80, host_port: 102 }]);
    pool.release(web);
    assert.deepEqual(pool.take([81]), [{ container_port: 81, host_port: 100 }]);
  });

  it('skips ports an adopted pod publishes', () => {
    const pool = new HostPortPool({ from: 100, to: 103 });
    pool.markTaken([{ host_port: 100 }, { host_port: 101 }]);
    assert.deepEqual(pool.take([80]), [{ container_port: 80, host_port: 102 }]);
  });

  it('runs out with resource_exhausted naming the range, taking none of the request', () => {
    const pool = new HostPortPool({ from: 100, to: 101 });
    pool.take([80]);
    assert.throws(
      () => pool.take([81, 82]),
      (err: unknown) =>
        err instanceof BerthError && err.code === 'resource_exhausted' && err.message.includes('100-101'),
    );
    // The port the failed request took first went back: one is still free.
    assert.deepEqual(pool.take([83]), [{ container_port: 83, host_port: 101 }]);
  });
});
