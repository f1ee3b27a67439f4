import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BbsClient, type HeartbeatCellRequest, openBbsStore } from '../bbs/index.js';
import { testRep, withMethod } from '../testing/rep-fixtures.js';
import { SimulatedExecutor } from '../testing/simulated-executor.js';
import { buildApp } from './build-app.js';

// The server's pacing (src/bbs/cell-pacing.ts) end to end: store → HTTP → BbsClient → rep.
describe('heartbeats the server paces, seen by a rep', () => {
  it('the grant reaches the rep through HTTP, and the rep beats and passes at its pace', async () => {
    const store = await openBbsStore(':memory:', {
      cellPacing: { maxHeartbeatsPerSecond: 0.5, maxCellPassesPerSecond: 0.25 },
    });
    const app = await buildApp({ store });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    const bbs = new BbsClient(
      `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    );
    const dir = mkdtempSync(join(tmpdir(), 'berth-pacing-'));
    const executor = new SimulatedExecutor({
      capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
      hostAddress: '127.0.0.1',
      dataDir: dir,
    });
    let beats = 0;
    const counted = withMethod(bbs, 'heartbeatCell', (req: HeartbeatCellRequest) => {
      beats += 1;
      return bbs.heartbeatCell(req);
    });
    // Asked: a 300 ms TTL (a beat every 100 ms) and a pass every 100 ms. One cell at 0.5
    // heartbeats/s gets a 6 s TTL (a beat every 2 s) and passes 4 s apart.
    const rep = testRep(counted, executor, { presenceTtlMs: 300, pollIntervalMs: 100 });
    try {
      await rep.start();
      assert.equal(rep.heartbeatIntervalMs(), 2_000);
      assert.equal(rep.pollIntervalMs(), 4_000);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      // At the asked pace there would be ~10 more; at the granted one, none is due yet.
      assert.equal(beats, 1, `heartbeats sent: ${beats}`);
      const [cell] = await bbs.listCells();
      assert.ok(cell && Date.parse(cell.expires_at) - Date.now() > 4_000, 'the presence lives 6 s');
    } finally {
      rep.stop();
      executor.stop();
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
