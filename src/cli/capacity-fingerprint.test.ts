import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { capacityReserve, fingerprintCapacity, readMachineTotals } from './capacity-fingerprint.js';

const gib = 1024 * 1024 * 1024;

describe('the capacity a cell advertises (fingerprint of the machine)', () => {
  it('a 16 GB laptop with 200 GB free offers its memory and disk less a tenth', () => {
    assert.deepEqual(fingerprintCapacity({ memoryBytes: 16 * gib, diskAvailableBytes: 200 * gib }), {
      memory_mb: 16 * 1024 - Math.ceil(16 * 1024 * 0.1),
      disk_mb: 200 * 1024 - Math.ceil(200 * 1024 * 0.1),
    });
  });

  it('a small machine keeps at least 512 MB of memory and 1 GB of disk back', () => {
    assert.deepEqual(fingerprintCapacity({ memoryBytes: 2 * gib, diskAvailableBytes: 4 * gib }), {
      memory_mb: 2048 - capacityReserve.minMemoryMb,
      disk_mb: 4096 - capacityReserve.minDiskMb,
    });
  });

  it('never offers less than the floor, so a tiny machine still takes one small instance', () => {
    assert.deepEqual(fingerprintCapacity({ memoryBytes: 256 * 1024 * 1024, diskAvailableBytes: 0 }), {
      memory_mb: capacityReserve.floorMb,
      disk_mb: capacityReserve.floorMb,
    });
  });

  it('flags win over the fingerprint, each on its own', () => {
    const totals = { memoryBytes: 16 * gib, diskAvailableBytes: 200 * gib };
    assert.deepEqual(fingerprintCapacity(totals, { memory_mb: 2048, disk_mb: 8192 }), {
      memory_mb: 2048,
      disk_mb: 8192,
    });
    assert.equal(
      fingerprintCapacity(totals, { disk_mb: 100 }).memory_mb,
      fingerprintCapacity(totals).memory_mb,
    );
  });

  it('the example system scaled to 20 fits what an 8 GB laptop with 20 GB free offers', () => {
    // examples/shop.yaml per /web/api instance: the API (32 MB, 64 MB disk) and its log shipper
    // (16 MB, 16 MB disk); once: /db (32 MB, 64 MB disk).
    const offered = fingerprintCapacity({ memoryBytes: 8 * gib, diskAvailableBytes: 20 * gib });
    assert.ok(offered.memory_mb >= 20 * (32 + 16) + 32);
    assert.ok(offered.disk_mb >= 20 * (64 + 16) + 64);
  });

  it('reads this machine: its memory, and the free disk of the nearest existing directory', () => {
    const totals = readMachineTotals('/tmp/does/not/exist/yet');
    assert.ok(totals.memoryBytes > 0);
    assert.ok(totals.diskAvailableBytes >= 0);
  });
});
