/**
 * Named volumes managed by berth (`berth volume create|list|inspect|rm`, `-v NAME:/path`): one
 * directory each under `<data dir>/volumes/<name>/`, the data in its `_data/`, kept across pods
 * until removed. The volumes dir's flock orders removal against use: a prepare that resolves a
 * named volume holds it shared until its pod.json names the volume, `rm` holds it exclusively
 * while it looks for pods that use the volume and deletes it, so no pod ever names a deleted volume.
 */
import { closeSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BerthError,
  ensurePrivateDir,
  errnoCode,
  InvalidArgumentError,
  NotFoundError,
  removeTree,
  writeFileAtomic,
} from '../core/index.js';
import { type LockMode, openDirFd, waitLock } from './flock.js';
import type { PodStore } from './pod-store.js';
import { volumeNamePattern } from './pod-volumes.js';

export interface NamedVolume {
  readonly name: string;
  readonly created: string;
  /** The host directory pods mount. */
  readonly mountpoint: string;
}

/** Pods in these phases are about to be deleted: they no longer hold their volumes. */
const leavingPhases = new Set(['garbage', 'exited-garbage']);

export class VolumeStore {
  readonly dir: string;

  constructor(
    dataDir: string,
    readonly pods: PodStore,
  ) {
    this.dir = join(dataDir, 'volumes');
  }

  #ensureDir(): void {
    ensurePrivateDir(this.pods.dirs.root);
    ensurePrivateDir(this.dir, { owned: true });
  }

  /** Locks the volumes dir (shared: using volumes; exclusive: removing one); returns the release. */
  async lock(mode: LockMode): Promise<() => void> {
    this.#ensureDir();
    const fd = openDirFd(this.dir);
    try {
      await waitLock(fd, mode);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    return () => closeSync(fd); // closing the only fd of this open file releases its flock
  }

  #check(name: string): string {
    if (!volumeNamePattern.test(name))
      throw new InvalidArgumentError(
        `Invalid volume name "${name}": use letters, digits, "_", "." and "-" (max 63)`,
        { name },
      );
    return name;
  }

  /** Makes a volume; `ifMissing` returns an existing one instead of refusing it. */
  create(name: string, options: { ifMissing?: boolean } = {}): NamedVolume {
    this.#ensureDir();
    const dir = join(this.dir, this.#check(name));
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST') throw err;
      if (options.ifMissing && existsSync(join(dir, 'volume.json'))) return this.inspect(name);
      if (!options.ifMissing) throw new BerthError('conflict', `Volume "${name}" already exists`, { name });
    }
    // Created by a racing `create`, or left half-made by a crash: either way complete it now.
    mkdirSync(join(dir, '_data'), { recursive: true, mode: 0o755 });
    if (!existsSync(join(dir, 'volume.json')))
      writeFileAtomic(
        join(dir, 'volume.json'),
        `${JSON.stringify({ name, created: new Date().toISOString() })}\n`,
      );
    return this.inspect(name);
  }

  inspect(name: string): NamedVolume {
    const dir = join(this.dir, this.#check(name));
    let created: string;
    try {
      created = (JSON.parse(readFileSync(join(dir, 'volume.json'), 'utf8')) as { created: string }).created;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') throw new NotFoundError('volume', name);
      throw err;
    }
    return { name, created, mountpoint: join(dir, '_data') };
  }

  list(): NamedVolume[] {
    let names: string[];
    try {
      names = readdirSync(this.dir).filter((n) => volumeNamePattern.test(n));
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return [];
      throw err;
    }
    return names.flatMap((n) => {
      try {
        return [this.inspect(n)];
      } catch (err) {
        if (err instanceof NotFoundError) return []; // being created or removed right now
        throw err;
      }
    });
  }

  /** UUIDs of the pods (not being deleted) whose volumes include this one. */
  users(name: string): string[] {
    const mountpoint = join(this.dir, name, '_data');
    return this.pods
      .list()
      .filter((p) => !leavingPhases.has(p.phase))
      .filter((p) => p.manifest?.volumes?.some((v) => v.kind === 'named' && v.source === mountpoint))
      .map((p) => p.uuid);
  }

  /** Deletes a volume and its data; refused while any pod uses it. */
  async remove(name: string): Promise<void> {
    this.inspect(name);
    const release = await this.lock('exclusive');
    try {
      const users = this.users(name);
      if (users.length > 0)
        throw new BerthError(
          'conflict',
          `Cannot remove volume "${name}": pod${users.length > 1 ? 's' : ''} ${users.join(', ')} use${users.length > 1 ? '' : 's'} it (remove ${users.length > 1 ? 'them' : 'it'} first)`,
          { name, pods: users },
        );
      removeTree(join(this.dir, name));
    } finally {
      release();
    }
  }
}
