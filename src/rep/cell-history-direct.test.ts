import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { IngestRecord } from '../history/index.js';
import { waitFor } from '../testing/cluster-harness.js';
import { SimulatedExecutor } from '../testing/simulated-executor.js';
import { CellHistory } from './cell-history.js';

const historyIndex = fileURLToPath(new URL('../history/index.js', import.meta.url));

/** Runs an ES module script in another process, as `berth run` drops from its own. */
function inAnotherProcess(script: string, ...args: string[]): void {
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script, ...args]);
  assert.equal(result.status, 0, result.stderr.toString());
}

/**
 * The cell delivers what `berth run` & co. drop on its data dir as they drop it: woken by a watch
 * on the drop dirs, not by a poll. The safety net is an hour here, so only the wake-up can
 * deliver within the test.
 */
describe("a cell delivers direct pods' history when it is dropped", () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'berth-cell-direct-'));
  const executor = new SimulatedExecutor({
    capacity: { memory_mb: 64, disk_mb: 64, containers: 1 },
    hostAddress: '127.0.0.1',
    dataDir,
  });
  const posted: IngestRecord[] = [];
  const cellHistory = new CellHistory(dataDir, 'cell-1', executor, () => undefined, {
    directPodsSafetyNetMs: 3_600_000,
  });
  before(() => {
    cellHistory.start(async (batch) => {
      posted.push(...batch);
    });
  });
  after(async () => {
    await cellHistory.stop();
    executor.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** `berth run`'s part: a start of `containerId` dropped on the data dir by another process. */
  function dropStart(containerId: string): void {
    inAnotherProcess(
      `const { podDropbox } = await import(process.argv[1]);
       podDropbox(process.argv[2]).drop([{ type: 'event', container_id: process.argv[3], event: 'start', external_timestamp: new Date().toISOString(), entity_type: 'user' }]);`,
      historyIndex,
      dataDir,
      containerId,
    );
  }

  const postedFor = (containerId: string) => async () =>
    posted.some((r) => 'container_id' in r && r.container_id === containerId) ? true : undefined;

  it('a drop made by another process is posted and removed', async () => {
    dropStart('pod-a');
    await waitFor('the drop posted', postedFor('pod-a'));
    await waitFor('the dropbox emptied', async () =>
      readdirSync(join(dataDir, 'pod-history')).length === 0 ? true : undefined,
    );
  });

  it('an obituary left by another process is taken at once (an unreadable one is dropped)', async () => {
    const obituary = join(dataDir, 'pod-obituaries', 'pod-b.json');
    inAnotherProcess(
      `import { writeFileSync, renameSync } from 'node:fs';
       writeFileSync(process.argv[1] + '.tmp', 'not json');
       renameSync(process.argv[1] + '.tmp', process.argv[1]);`,
      obituary,
    );
    await waitFor('the obituary taken', async () => (existsSync(obituary) ? undefined : true));
  });

  it('drop dirs removed under the cell are made and watched again', async () => {
    rmSync(join(dataDir, 'pod-history'), { recursive: true });
    // The removal woke the loop, whose round makes the dir again and watches the new one.
    await waitFor('the dropbox made again', async () =>
      existsSync(join(dataDir, 'pod-history')) ? true : undefined,
    );
    dropStart('pod-c');
    await waitFor('the drop in the new dir posted', postedFor('pod-c'));
  });
});
