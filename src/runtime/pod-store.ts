import {
  closeSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  statSync,
} from 'node:fs';
import { join, posix } from 'node:path';
import {
  BerthError,
  ensurePrivateDir,
  errnoCode,
  InvalidArgumentError,
  NotFoundError,
  removeTree,
} from '../core/index.js';
import { openConfinedDirFd } from './confined-dir.js';
import { isLocked, tryLock } from './flock.js';
import { randomUuid } from './native-process.js';
import { emptyVolumeDir, phaseDir, podDir, podFiles, type RuntimeDirs, runtimeDirs } from './pod-dirs.js';
import type { AppExit, PodExit, PodManifest, PodNetwork, PodStarted } from './pod-manifest.js';
import {
  assertPhaseMove,
  lockedPhases,
  type PodPhase,
  type PodState,
  podPhases,
  podState,
} from './pod-state.js';

export interface PodLocation {
  readonly uuid: string;
  readonly phase: PodPhase;
}

/** Everything `status` and `list` report about one pod, sampled at one moment. */
export interface PodInfo extends PodLocation {
  readonly state: PodState;
  readonly manifest: PodManifest | undefined;
  readonly started: PodStarted | undefined;
  readonly exit: PodExit | undefined;
  readonly network: PodNetwork | undefined;
  /** A running pod of several apps: the ends of those of its apps that have ended. */
  readonly appExits: readonly AppExit[] | undefined;
  /** The container's init pid while running (runc's pid file; informational, never the truth). */
  readonly pid: number | null;
  /** ctime of the pod directory: when it entered its current phase (gc's clock). */
  readonly phaseChangedAt: Date;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (err) {
    const code = errnoCode(err);
    // Missing, moved away mid-read, or torn by a crash before its rename: all mean "not recorded".
    if (code === 'ENOENT' || code === 'ENOTDIR' || err instanceof SyntaxError) return undefined;
    throw err;
  }
}

/**
 * The pods directory tree of seed 000. All state changes are rename(2)s between phase
 * directories made while holding the right lock; losing a rename race (ENOENT) is normal.
 */
export class PodStore {
  readonly dirs: RuntimeDirs;

  constructor(dataDir: string) {
    this.dirs = runtimeDirs(dataDir);
  }

  /**
   * The data dir and the pods' and runc's dirs, private to root (0700): pod manifests hold the
   * apps' env. Containers never walk these paths (runc mounts their root and files as root), so a
   * container running as any user still starts.
   */
  ensureDirs(): void {
    ensurePrivateDir(this.dirs.root);
    ensurePrivateDir(this.dirs.pods, { owned: true });
    for (const phase of podPhases) mkdirSync(phaseDir(this.dirs, phase), { recursive: true });
    ensurePrivateDir(this.dirs.runc, { owned: true });
  }

  path(location: PodLocation): string {
    return podDir(this.dirs, location.phase, location.uuid);
  }

  /**
   * The host directories that make up the pod's root as the container sees it, top first: its
   * overlay upper dir (its own writes), then the image's rootfs. Read them with LayeredRoot
   * (layered-root.ts), never by joining a container path onto them: the container owns the
   * upper dir's symlinks.
   */
  rootLayers(info: PodLocation & { readonly manifest: PodManifest | undefined }): string[] {
    const upper = join(this.path(info), podFiles.upper);
    return info.manifest ? [upper, info.manifest.image.rootfs] : [upper];
  }

  /**
   * Where a path of the container (its first app's view) is on the host, as layers to read with
   * LayeredRoot: in the volume mounted over it (the deepest mount target holding it), else in the
   * root's layers (`rootLayers`). A volume is its own root there: a symlink in it to an absolute
   * path resolves inside the volume, never on the host. A tmpfs volume ends with its pod's run:
   * undefined, as for a missing file.
   */
  fileLayers(
    info: PodLocation & { readonly manifest: PodManifest | undefined },
    path: string,
  ): { readonly layers: string[]; readonly path: string } | undefined {
    const inContainer = posix.normalize(`/${path}`);
    let deepest: { readonly volume: string; readonly target: string } | undefined;
    for (const mount of info.manifest?.app.mounts ?? []) {
      const holds = inContainer === mount.target || inContainer.startsWith(`${mount.target}/`);
      if (holds && mount.target.length > (deepest?.target.length ?? -1)) deepest = mount;
    }
    if (!deepest) return { layers: this.rootLayers(info), path: inContainer };
    const { volume: name, target } = deepest;
    const volume = info.manifest?.volumes?.find((v) => v.name === name);
    if (volume === undefined || volume.tmpfsBytes !== undefined) return undefined;
    const dir = volume.source ?? emptyVolumeDir(this.path(info), volume.name);
    return { layers: [dir], path: `/${inContainer.slice(target.length).replace(/^\/+/, '')}` };
  }

  /**
   * Embryo → Prepare: creates the pod directory, locks it exclusively and moves it to prepare/
   * with the lock held, so it never appears unlocked (= prepare-failed) in prepare/.
   * Returns the held lock fd; closing it (or dying) leaves a failed prepare for gc.
   */
  createPreparing(): { uuid: string; lockFd: number } {
    this.ensureDirs();
    const uuid = randomUuid();
    const embryo = podDir(this.dirs, 'embryo', uuid);
    mkdirSync(embryo);
    // The lock fd ends up inside the container (stage1.ts): confined, so it is no way out.
    let lockFd: number;
    try {
      lockFd = openConfinedDirFd(embryo);
    } catch (err) {
      rmdirSync(embryo);
      throw err;
    }
    if (!tryLock(lockFd, 'exclusive')) {
      closeSync(lockFd);
      throw new BerthError('internal', `Cannot lock new pod ${uuid}: someone else holds its lock`);
    }
    this.move({ uuid, phase: 'embryo' }, 'prepare');
    return { uuid, lockFd };
  }

  /** Renames a pod to another phase. False when it was not there (another actor moved it). */
  move(from: PodLocation, to: PodPhase): boolean {
    assertPhaseMove(from.phase, to, from.uuid);
    try {
      renameSync(this.path(from), podDir(this.dirs, to, from.uuid));
      return true;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return false;
      throw err;
    }
  }

  /** Deletes a pod directory; only ever called from a garbage phase with the lock held. */
  remove(location: PodLocation): void {
    if (location.phase !== 'garbage' && location.phase !== 'exited-garbage') {
      throw new BerthError('internal', `Refusing to delete pod ${location.uuid} from ${location.phase}/`);
    }
    removeTree(this.path(location));
  }

  listPhase(phase: PodPhase): string[] {
    try {
      return readdirSync(phaseDir(this.dirs, phase)).filter((name) => uuidPattern.test(name));
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return [];
      throw err;
    }
  }

  /**
   * Entries with a pod's name that are no directory, so no pod: an older berth's `wait --timeout`
   * (flock(1) given the pod dir's path) made an empty file where a pod dir had just moved away.
   */
  listStray(phase: PodPhase): string[] {
    try {
      return readdirSync(phaseDir(this.dirs, phase), { withFileTypes: true })
        .filter((entry) => !entry.isDirectory() && uuidPattern.test(entry.name))
        .map((entry) => entry.name);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return [];
      throw err;
    }
  }

  /**
   * Finds a pod by full UUID, unique UUID prefix or pod name. Phases are searched in lifecycle
   * order so a pod moving forward during the search is still found in its new phase.
   */
  locate(ref: string): PodLocation {
    if (ref === '') throw new InvalidArgumentError('A pod UUID (or unique prefix, or name) is required');
    if (uuidPattern.test(ref)) {
      for (const phase of podPhases) {
        if (existsSync(podDir(this.dirs, phase, ref))) return { uuid: ref, phase };
      }
      throw new NotFoundError('pod', ref);
    }
    const matches = new Map<string, PodPhase>();
    const byName = new Map<string, PodPhase>();
    for (const phase of podPhases) {
      for (const uuid of this.listPhase(phase)) {
        if (uuid.startsWith(ref)) matches.set(uuid, phase);
        else if (this.readManifest({ uuid, phase })?.name === ref) byName.set(uuid, phase);
      }
    }
    const found = matches.size > 0 ? matches : byName;
    if (found.size === 0) throw new NotFoundError('pod', ref);
    if (found.size > 1) {
      throw new InvalidArgumentError(
        `Pod reference "${ref}" is ambiguous: it matches ${[...found.keys()].join(', ')}`,
      );
    }
    const [[uuid, phase]] = [...found.entries()] as [[string, PodPhase]];
    return { uuid, phase };
  }

  readManifest(location: PodLocation): PodManifest | undefined {
    return readJson<PodManifest>(join(this.path(location), podFiles.manifest));
  }

  /**
   * The pod's exit.json, whatever its lock says: stage 1 writes it once the apps are gone, before
   * the teardown it does under the lock (`inspect` reads it only once the lock is free).
   */
  readExit(location: PodLocation): PodExit | undefined {
    return readJson<PodExit>(join(this.path(location), podFiles.exit));
  }

  /** The pod's network.json: written once its `--net private` network was attached. */
  readNetwork(location: PodLocation): PodNetwork | undefined {
    return readJson<PodNetwork>(join(this.path(location), podFiles.network));
  }

  /**
   * Samples a pod's state: its phase plus, where the seed gives locks a meaning, a shared
   * non-blocking lock probe. Returns undefined when the pod moved away meanwhile.
   */
  inspect(location: PodLocation): PodInfo | undefined {
    const dir = this.path(location);
    let locked = false;
    if (lockedPhases.has(location.phase)) {
      const sample = isLocked(dir);
      if (sample === undefined) return undefined;
      locked = sample;
    }
    let ctime: Date;
    try {
      ctime = statSync(dir).ctime;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return undefined;
      throw err;
    }
    const state = podState(location.phase, locked);
    const manifest = this.readManifest(location);
    // Read only what the state can have: listing 10,000 pods is dominated by file reads.
    const mayHaveRun = location.phase === 'run' || location.phase === 'exited-garbage';
    const exit = mayHaveRun && state !== 'running' ? readJson<PodExit>(join(dir, podFiles.exit)) : undefined;
    const started =
      exit?.started_at !== undefined
        ? { started_at: exit.started_at, pid: null }
        : mayHaveRun
          ? readJson<PodStarted>(join(dir, podFiles.started))
          : undefined;
    const network =
      mayHaveRun && manifest?.net === 'private'
        ? readJson<PodNetwork>(join(dir, podFiles.network))
        : undefined;
    const appExits =
      state === 'running' && (manifest?.sideApps?.length ?? 0) > 0
        ? (readJson<AppExit[]>(join(dir, podFiles.appExits)) ?? [])
        : undefined;
    const pidText = state === 'running' ? readFileText(join(dir, podFiles.pid)) : undefined;
    return {
      ...location,
      state,
      manifest,
      started,
      exit,
      network,
      appExits,
      pid: pidText && /^\d+$/.test(pidText.trim()) ? Number(pidText.trim()) : null,
      phaseChangedAt: ctime,
    };
  }

  /** Every pod, phase by phase; pods that move mid-scan may be reported in either phase or skipped. */
  list(): PodInfo[] {
    const pods: PodInfo[] = [];
    const seen = new Set<string>();
    for (const phase of podPhases) {
      for (const uuid of this.listPhase(phase)) {
        if (seen.has(uuid)) continue;
        const info = this.inspect({ uuid, phase });
        if (info) {
          pods.push(info);
          seen.add(uuid);
        }
      }
    }
    return pods;
  }
}

function readFileText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}
