import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BerthError,
  errnoCode,
  InvalidArgumentError,
  NotFoundError,
  writeFileAtomic,
} from '../core/index.js';
import { attachNetworkInBackground, detachNetwork, type NetworkAttachment } from './cni-network.js';
import { openConfinedDirFd } from './confined-dir.js';
import { openDirFd, tryLock, unlock, waitLock } from './flock.js';
import { holderStarted, readHolderAnswer } from './holder-pipe.js';
import type { HolderRun, HolderStarter } from './holder-pool.js';
import { holderStarter } from './holder-start.js';
import type { ResolvedImage } from './image/image-types.js';
import { buildOciConfig } from './oci-config.js';
import { defaultAppName, podContainerIds } from './pod-apps.js';
import {
  planApp,
  planSideApp,
  planVolumes,
  type ResolvedSideApp,
  resolveImage,
  resolveSideApps,
  writePodBundle,
} from './pod-bundle.js';
import { destroyPod } from './pod-destroy.js';
import { podFiles } from './pod-dirs.js';
import { hostResolvConf, hostsFile, tryLockFor, waitLockWithTimeout } from './pod-host-support.js';
import { liveLeftovers, type PodLeftovers } from './pod-leftovers.js';
import { checkLogSizeMax, defaultLogSizeMax } from './pod-log.js';
import type { PodExit, PodManifest, PodVolume } from './pod-manifest.js';
import { defaultPidsLimit, type PrepareOptions } from './pod-options.js';
import { type PodInfo, type PodLocation, PodStore } from './pod-store.js';
import { resolveMounts } from './pod-volumes.js';
import { VolumeStore } from './volume-store.js';

// The pod commands import these from here, a start-up entry of `berth run` (.dependency-cruiser.cjs).
export { appNamePattern, findApp, podApps } from './pod-apps.js';
export { appOciConfigPath } from './pod-dirs.js';
export {
  defaultPidsLimit,
  ImageUnavailableError,
  type MountSpec,
  type PrepareOptions,
  parseMemory,
  type SideAppOptions,
  type VolumeSpec,
} from './pod-options.js';
export { parseMountFlag, parseShortVolume, parseVolumeFlag } from './pod-volumes.js';

const sharedNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Resolves image references; the image store implements it (kept as a seam for the executor). */
export interface ImageResolver {
  resolve(ref: string): Promise<ResolvedImage>;
}

export type { ResolvedImage };

const namePattern = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/;

/** A prepared pod in prepare/, its lock held by the caller (see `PodRuntime.prepare`). */
export interface PreparedPod {
  readonly location: PodLocation;
  readonly manifest: PodManifest;
  readonly lockFd: number;
  readonly network?: Promise<NetworkAttachment>;
}

/**
 * The node-local pod runtime of seed 000 over runc. Stateless: every call re-reads the pods
 * directory, so any number of berth processes can work on one data dir at once.
 */
export class PodRuntime {
  readonly store: PodStore;

  readonly volumes: VolumeStore;

  readonly #images: ImageResolver;
  readonly #holders: HolderStarter;

  constructor(
    readonly dataDir: string,
    images: ImageResolver,
    options: {
      /**
       * Reuse stage-1 holders from pod to pod (holder-pool.ts): for a long-lived caller, a cell.
       * Without it each detached pod gets a holder process of its own, as `berth run -d` must.
       */
      readonly holderPool?: boolean;
    } = {},
  ) {
    this.#images = images;
    this.store = new PodStore(dataDir);
    this.volumes = new VolumeStore(dataDir, this.store);
    this.#holders = holderStarter(options.holderPool ?? false);
  }

  /** Lets the idle pooled holders go (a cell that stops); those serving pods finish them first. */
  closeHolders(): void {
    this.#holders.close();
  }

  /**
   * Resolves an image reference as `prepare` does (ImageUnavailableError when it cannot): a caller
   * that prepares on another thread resolves here, where the image store is.
   */
  resolveImage(ref: string): Promise<ResolvedImage> {
    return resolveImage(this.#images, ref);
  }

  /**
   * Embryo → Prepare → (bundle written) with the exclusive lock held. The caller moves the pod
   * on (to prepared/ or run/) and owns the returned lock fd. Any failure here leaves the pod
   * unlocked in prepare/: prepare-failed, for gc.
   */
  async prepare(imageRef: string, options: PrepareOptions): Promise<PreparedPod> {
    if ((options.ports?.length ?? 0) > 0 && (options.net ?? 'private') !== 'private') {
      throw new InvalidArgumentError('Publishing ports needs --net private', { flag: 'publish' });
    }
    if (options.name !== undefined && !namePattern.test(options.name)) {
      throw new InvalidArgumentError(
        `Invalid --name "${options.name}": use letters, digits, "_", "." and "-" (max 63)`,
        {
          flag: 'name',
        },
      );
    }
    if (
      options.sharedDir !== undefined &&
      (!options.sharedDir.startsWith('/') ||
        options.sharedDir.split('/').some((p) => p === '..' || p === '.'))
    )
      throw new InvalidArgumentError(`Invalid shared dir "${options.sharedDir}": expected an absolute path`, {
        field: 'sharedDir',
      });
    const logSizeMax =
      options.logSizeMax === undefined ? defaultLogSizeMax : checkLogSizeMax(options.logSizeMax);
    const image = await resolveImage(this.#images, imageRef);
    // Everything that can be refused is settled before the pod dir exists: no half-made pod.
    const usesNamed = (options.volumes ?? []).some((v) => v.kind === 'named');
    const releaseVolumes = usesNamed ? await this.volumes.lock('shared') : undefined;
    try {
      const volumes = planVolumes(options, this.volumes);
      const firstName = options.appName ?? defaultAppName(imageRef);
      // Mounts are refused here, with no pod made; a bad workdir or user, as ever, in the pod's prepare.
      resolveMounts(options.mounts ?? [], volumes, firstName);
      const sideApps = await resolveSideApps(this.#images, options, firstName, volumes);
      return await this.#makePod(imageRef, image, options, { volumes, sideApps, firstName, logSizeMax });
    } finally {
      releaseVolumes?.();
    }
  }

  async #makePod(
    imageRef: string,
    image: ResolvedImage,
    options: PrepareOptions,
    planned: { volumes: PodVolume[]; sideApps: ResolvedSideApp[]; firstName: string; logSizeMax: number },
  ): Promise<PreparedPod> {
    const { uuid, lockFd } = this.store.createPreparing();
    const location: PodLocation = { uuid, phase: 'prepare' };
    const ports = options.ports ?? [];
    const network =
      options.attachNetworkNow && (options.net ?? 'private') === 'private'
        ? attachNetworkInBackground(uuid, this.store.dirs.root, ports)
        : undefined;
    try {
      const path = this.store.path(location);
      const hostname = options.name ?? uuid.slice(0, 12);
      const manifest: PodManifest = {
        uuid,
        name: options.name ?? '',
        hostname,
        image: { ref: imageRef, id: image.id, rootfs: image.rootfs },
        app: planApp(image, options, hostname, planned.firstName, planned.volumes),
        net: options.net ?? 'private',
        ports,
        memoryBytes: options.memoryBytes ?? null,
        pidsLimit: options.pidsLimit === undefined ? defaultPidsLimit : options.pidsLimit,
        logSizeMax: planned.logSizeMax,
        labels: options.labels ?? {},
        ...(options.sharedDir !== undefined ? { sharedDir: options.sharedDir } : {}),
        ...(planned.sideApps.length > 0
          ? { sideApps: planned.sideApps.map((a) => planSideApp(a, hostname, planned.volumes)) }
          : {}),
        ...(options.exitOnFirst ? { exitOnFirst: true } : {}),
        ...(planned.volumes.length > 0 ? { volumes: planned.volumes } : {}),
        created: new Date().toISOString(),
      };
      const runDir = this.store.path({ uuid, phase: 'run' });
      writePodBundle(
        path,
        runDir,
        manifest,
        options.sharedFiles ?? {},
        { hosts: hostsFile(hostname), resolvConf: manifest.net === 'none' ? '' : hostResolvConf() },
        checkSharedName,
      );
      return { location, manifest, lockFd, ...(network ? { network } : {}) };
    } catch (err) {
      if (network) {
        const attached = await network.catch(() => undefined);
        detachNetwork(uuid, ports, 'subnet', attached ? { slice: attached.slice } : 'unrecorded');
      }
      closeSync(lockFd); // unlocked in prepare/ = prepare-failed, exactly as the seed says
      throw err;
    }
  }

  /** `berth prepare`: Prepare → Prepared, then the lock is released (it means nothing there). */
  async prepareOnly(imageRef: string, options: PrepareOptions): Promise<string> {
    const { location, lockFd } = await this.prepare(imageRef, options);
    try {
      this.store.move(location, 'prepared');
    } finally {
      closeSync(lockFd);
    }
    return location.uuid;
  }

  /**
   * Prepared → Run for `run-prepared`: lock first, then rename, exactly as the seed orders it.
   * Of two racing callers exactly one wins; the other gets a conflict naming the pod's state.
   */
  claimPrepared(ref: string): { location: PodLocation; manifest: PodManifest; lockFd: number } {
    const location = this.store.locate(ref);
    const alreadyStarted = () => {
      const now = this.store.inspect(this.store.locate(location.uuid));
      return new BerthError(
        'conflict',
        `Cannot run pod ${location.uuid}: it was already started (state: ${now?.state ?? 'gone'})`,
        {
          uuid: location.uuid,
        },
      );
    };
    if (location.phase !== 'prepared') {
      if (location.phase === 'run' || location.phase === 'exited-garbage') throw alreadyStarted();
      throw new BerthError(
        'conflict',
        `Cannot run pod ${location.uuid}: it is not prepared (phase: ${location.phase})`,
      );
    }
    let lockFd: number;
    try {
      // Passed into the container by stage 1: confined, like every pod's lock fd (pod-store.ts).
      lockFd = openConfinedDirFd(this.store.path(location));
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') throw alreadyStarted();
      throw err;
    }
    if (!tryLock(lockFd, 'exclusive') || !this.store.move(location, 'run')) {
      closeSync(lockFd);
      throw alreadyStarted();
    }
    const run: PodLocation = { uuid: location.uuid, phase: 'run' };
    const manifest = this.store.readManifest(run);
    if (!manifest) {
      closeSync(lockFd);
      throw new BerthError(
        'internal',
        `Pod ${location.uuid} has no pod.json: it was not prepared completely`,
      );
    }
    try {
      this.#upgradeOciConfig(run, manifest);
    } catch (err) {
      closeSync(lockFd);
      throw new BerthError(
        'internal',
        `Pod ${location.uuid} has an unreadable config.json: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    return { location: run, manifest, lockFd };
  }

  /**
   * A pod prepared by a berth before 2026-11-24 has a config.json without the root overlay (stage
   * 1 mounted it on the host then): written anew from its pod.json, it runs as any other.
   */
  #upgradeOciConfig(location: PodLocation, manifest: PodManifest): void {
    const path = join(this.store.path(location), podFiles.ociConfig);
    const config = JSON.parse(readFileSync(path, 'utf8')) as { mounts?: { destination?: string }[] };
    if (config.mounts?.some((m) => m.destination === '/')) return;
    writeFileAtomic(path, JSON.stringify(buildOciConfig(manifest, this.store.path(location))));
  }

  /**
   * Hands a pod in run/ (lock held by the caller) to a detached stage-1 holder process and waits
   * until the app runs. The caller's copy of the lock fd is closed: the holder's copy keeps it.
   */
  async startDetached(
    location: PodLocation,
    lockFd: number,
    options: {
      remove?: boolean;
      /** The holder ended (after the pod's teardown). */
      onExit?: () => void;
      /** The apps exited and exit.json holds their record; the holder still tears the pod down. */
      onAppsExited?: () => void;
    } = {},
  ): Promise<void> {
    const path = this.store.path(location);
    const logFd = openSync(join(path, podFiles.log), 'a');
    let holder: HolderRun;
    try {
      holder = this.#holders.run(
        { dataDir: this.dataDir, uuid: location.uuid, remove: options.remove ?? false },
        lockFd,
        logFd,
      );
    } finally {
      closeSync(logFd);
      closeSync(lockFd);
    }
    if (options.onExit) void holder.ended.then(options.onExit);
    // Informational (shown by status as holder_pid); the lock, not this file, is the truth.
    writeFileAtomic(join(path, podFiles.holderPid), `${holder.pid}\n`);
    const answer = await readHolderAnswer(holder.answers, options.onAppsExited);
    if (!holderStarted(answer)) {
      const info = this.store.inspect(location);
      throw new BerthError(
        'internal',
        `Pod ${location.uuid} failed to start: ${info?.exit?.reason ?? (answer || 'the stage-1 holder exited')}`,
      );
    }
  }

  /**
   * Replaces one file of a pod's shared dir, atomically (readers in the container see the old or
   * the new content). The dir is the host's: nothing the container does can redirect the write.
   */
  writeSharedFile(ref: string, name: string, content: string): void {
    const location = this.store.locate(ref);
    const manifest = this.store.readManifest(location);
    if (manifest?.sharedDir === undefined)
      throw new InvalidArgumentError(`Pod ${location.uuid} has no shared dir`, { pod: location.uuid });
    writeFileAtomic(join(this.store.path(location), podFiles.shared, checkSharedName(name)), content);
  }

  status(ref: string): PodInfo {
    const location = this.store.locate(ref);
    const info = this.store.inspect(location) ?? this.store.inspect(this.store.locate(location.uuid));
    if (!info) throw new NotFoundError('pod', ref);
    return info;
  }

  /**
   * Blocks until the pod is no longer running: a blocking shared flock(2), which the kernel grants
   * the moment the last process holding the pod's exclusive lock exits. No polling.
   */
  async waitExit(ref: string, timeoutMs?: number): Promise<PodInfo> {
    for (;;) {
      const location = this.store.locate(ref);
      if (location.phase === 'embryo' || location.phase === 'prepared') {
        throw new BerthError(
          'conflict',
          `Cannot wait for pod ${location.uuid}: it has not been started (state: ${location.phase === 'embryo' ? 'embryo' : 'prepared'})`,
        );
      }
      let fd: number;
      try {
        fd = openDirFd(this.store.path(location));
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') continue; // moved on meanwhile: look again
        // A file left at the pod's name (an older berth's flock(1) made one): no pod is there.
        if (errnoCode(err) === 'ENOTDIR') throw new NotFoundError('pod', ref);
        throw err;
      }
      try {
        if (timeoutMs === undefined) {
          await waitLock(fd, 'shared');
          unlock(fd);
        } else if (!(await waitLockWithTimeout(fd, timeoutMs))) {
          throw new BerthError(
            'unavailable',
            `Timed out after ${timeoutMs} ms waiting for pod ${location.uuid} to exit`,
            {
              uuid: location.uuid,
            },
          );
        }
      } finally {
        closeSync(fd);
      }
      const info = this.store.inspect(this.store.locate(location.uuid));
      if (info && info.state !== 'running' && info.state !== 'preparing') return info;
    }
  }

  /** SIGTERM (or the image's stop signal), then SIGKILL after the timeout; returns once exited. */
  async stop(ref: string, timeoutMs: number): Promise<PodInfo> {
    const info = this.status(ref);
    if (info.state !== 'running') {
      throw new BerthError('conflict', `Cannot stop pod ${info.uuid}: current state is ${info.state}`, {
        state: info.state,
      });
    }
    this.#runcKill(info, 'TERM');
    try {
      return await this.waitExit(info.uuid, timeoutMs);
    } catch (err) {
      if (!(err instanceof BerthError) || err.code !== 'unavailable') throw err;
    }
    this.#runcKill(info, 'KILL');
    return this.waitExit(info.uuid);
  }

  /** Signals every app of the pod. */
  #runcKill(info: PodInfo, signal: string): void {
    // A container that exited meanwhile makes runc fail; waitExit then returns at once.
    for (const id of podContainerIds(info.uuid, info.manifest))
      spawnSync('runc', ['--root', this.store.dirs.runc, 'kill', id, signal], { stdio: 'ignore' });
  }

  /**
   * `berth rm`: exited → exited-garbage, prepared/prepare-failed → garbage, then delete with the
   * exclusive lock held. A running or preparing pod is refused.
   */
  async remove(ref: string): Promise<string> {
    const info = this.status(ref);
    const refuse = () =>
      new BerthError(
        'conflict',
        `Cannot remove pod ${info.uuid}: current state is ${info.state}; stop it first`,
        {
          state: info.state,
        },
      );
    if (info.state === 'running' || info.state === 'preparing' || info.state === 'deleting') throw refuse();
    const target =
      info.phase === 'run'
        ? 'exited-garbage'
        : info.phase === 'exited-garbage' || info.phase === 'garbage'
          ? info.phase
          : 'garbage';
    const fd = openDirFd(this.store.path(info));
    try {
      // A status probe or a waiter may hold a shared lock for a moment; only a pod whose lock
      // stays taken (running, or being deleted) is refused.
      if (!(await tryLockFor(fd, 'exclusive', 500))) throw refuse();
      if (target !== info.phase && !this.store.move(info, target)) throw new NotFoundError('pod', ref);
      this.destroy({ uuid: info.uuid, phase: target });
    } finally {
      closeSync(fd);
    }
    return info.uuid;
  }

  /**
   * Final cleanup of a pod in a garbage phase whose exclusive lock the caller holds. `leftovers`
   * says what the pod left on the host; gc passes one listing for its whole sweep.
   */
  destroy(location: PodLocation, leftovers: PodLeftovers = liveLeftovers(this.store.dirs)): void {
    destroyPod(this.store, this.dataDir, location, leftovers);
  }

  /** Where a pod's log is: its dir holds `log` and, once rotated, `log.1` (pod-log.ts). */
  logDir(ref: string): { info: PodInfo; dir: string } {
    const info = this.status(ref);
    return { info, dir: this.store.path(info) };
  }
}

export type { PodExit };

function checkSharedName(name: string): string {
  if (!sharedNamePattern.test(name))
    throw new InvalidArgumentError(`Invalid shared file name "${name}": letters, digits, ".", "_", "-"`, {
      name,
    });
  return name;
}
