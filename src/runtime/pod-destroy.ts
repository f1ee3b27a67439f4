import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../core/index.js';
import { detachNetwork } from './cni-network.js';
import { unmountAll } from './mounts.js';
import { podContainerIds } from './pod-apps.js';
import { removePodCgroup } from './pod-cgroup.js';
import { obituariesDir, podFiles } from './pod-dirs.js';
import type { PodLeftovers } from './pod-leftovers.js';
import { readLogTail } from './pod-log-reader.js';
import type { PodObituary } from './pod-manifest.js';
import type { PodLocation, PodStore } from './pod-store.js';

/**
 * The last step of every pod's life (`berth rm`, gc, an executor's cleanup): what it left on the
 * host undone, its obituary written when the history has not noted its end, its dir deleted.
 */

/**
 * Final cleanup of a pod in a garbage phase whose exclusive lock the caller holds. `leftovers`
 * says what the pod left on the host; gc passes one listing for its whole sweep.
 */
export function destroyPod(
  store: PodStore,
  dataDir: string,
  location: PodLocation,
  leftovers: PodLeftovers,
): void {
  const path = store.path(location);
  unmountAll(path, leftovers.mounts);
  if (leftovers.hasNetns(location.uuid)) {
    // network.json without `masquerade`: attached by an older berth, with a NAT chain of its own.
    // No network.json at all: the holder died between attaching and recording it, so this berth.
    // No slice in it (a berth from before slices) or no network.json: DEL searches the stores.
    const network = store.readNetwork(location);
    const masquerade = network === undefined ? 'subnet' : (network.masquerade ?? 'per-pod');
    const reservedIn = network?.slice === undefined ? 'unrecorded' : { slice: network.slice };
    detachNetwork(location.uuid, store.readManifest(location)?.ports ?? [], masquerade, reservedIn);
  }
  for (const id of podContainerIds(location.uuid, store.readManifest(location))) {
    if (!leftovers.hasRuncState(id)) continue;
    spawnSync('runc', ['--root', store.dirs.runc, 'delete', '--force', id], { stdio: 'ignore' });
  }
  if (leftovers.hasCgroup(location.uuid)) removePodCgroup(location.uuid);
  writeObituary(store, dataDir, location, path);
  store.remove(location);
}

/**
 * Pods run directly (no executor label) whose end is not in the history yet leave an obituary,
 * so "every container berth ever ran" holds even for pods deleted the moment they exit. Best
 * effort: a pod with no exit record, or a full disk, leaves none.
 */
function writeObituary(store: PodStore, dataDir: string, location: PodLocation, path: string): void {
  try {
    if (existsSync(join(path, podFiles.historyNoted))) return;
    const info = store.inspect(location);
    const manifest = info?.manifest;
    if (!info?.exit || !manifest) return;
    if (Object.keys(manifest.labels).some((k) => k.startsWith('berth.executor.'))) return;
    // The end only: a flooding pod's log, read whole, would not even fit in a string.
    const log = readLogTail(path).text;
    const obituary: PodObituary = {
      uuid: location.uuid,
      manifest,
      started: info.started,
      exit: info.exit,
      log,
    };
    const dir = join(dataDir, obituariesDir);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileAtomic(join(dir, `${location.uuid}.json`), JSON.stringify(obituary));
  } catch {
    // Losing an obituary loses one end in the history, never the pod's deletion.
  }
}
