/**
 * The apps of a pod. The first app is the pod's own bundle, as in pods of one app: its runc
 * container is named by the pod's UUID and its files (rootfs, upper, work, config.json, pid, log)
 * are the pod dir's. Every other app is a runc container of its own, `<uuid>.<name>`, whose bundle
 * is `apps/<name>/` in the same pod dir, under the same lock: the pod's on-disk lifecycle is
 * unchanged by how many apps it has.
 */
import { join } from 'node:path';
import { InvalidArgumentError } from '../core/index.js';
import type { PodApp, PodManifest } from './pod-manifest.js';

/** rkt's app names (an AC name): lower-case letters, digits and "-". */
export const appNamePattern = /^[a-z0-9][a-z0-9-]{0,29}$/;

export interface PodAppRun {
  readonly index: number;
  readonly name: string;
  /** runc's name for the app's container. */
  readonly containerId: string;
  /** The app's bundle dir inside the pod dir: "" for the first app. */
  readonly bundle: string;
  readonly image: PodManifest['image'];
  readonly app: PodApp;
}

/** The name the first app has when none was given: its image's last path part, as rkt's. */
export function defaultAppName(imageRef: string): string {
  const base = (imageRef.split('/').pop() ?? '').replace(/[:@].*$/, '').toLowerCase();
  const clean = base
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 30);
  return clean === '' ? 'app' : clean;
}

/** Checks a pod's app names: valid, and distinct (a clash asks for `--app-name`). */
export function checkAppNames(names: readonly string[]): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (!appNamePattern.test(name))
      throw new InvalidArgumentError(
        `Invalid app name "${name}": lower-case letters, digits and "-" (max 30)`,
        { flag: 'app-name' },
      );
    if (seen.has(name))
      throw new InvalidArgumentError(`Two apps of the pod are named "${name}": give one --app-name`, {
        flag: 'app-name',
      });
    seen.add(name);
  }
}

export function sideAppBundle(name: string): string {
  return join('apps', name);
}

/** Every app of the pod, the first one first. */
export function podApps(manifest: PodManifest): PodAppRun[] {
  const first: PodAppRun = {
    index: 0,
    name: manifest.app.name ?? defaultAppName(manifest.image.ref),
    containerId: manifest.uuid,
    bundle: '',
    image: manifest.image,
    app: manifest.app,
  };
  return [
    first,
    ...(manifest.sideApps ?? []).map((side, i) => ({
      index: i + 1,
      name: side.name,
      containerId: `${manifest.uuid}.${side.name}`,
      bundle: sideAppBundle(side.name),
      image: side.image,
      app: side,
    })),
  ];
}

/** The runc containers a pod may have left: its own, and one per other app. */
export function podContainerIds(uuid: string, manifest: PodManifest | undefined): string[] {
  return manifest ? podApps(manifest).map((a) => a.containerId) : [uuid];
}

/** One app by name (`berth enter --app`, `logs --app`); undefined names the first. */
export function findApp(manifest: PodManifest, name: string | undefined): PodAppRun {
  const apps = podApps(manifest);
  if (name === undefined) return apps[0] as PodAppRun;
  const app = apps.find((a) => a.name === name);
  if (!app)
    throw new InvalidArgumentError(
      `Pod ${manifest.uuid} has no app "${name}" (its apps: ${apps.map((a) => a.name).join(', ')})`,
      { app: name },
    );
  return app;
}
