import type { BbsStore, CellPresence } from '../bbs/index.js';
import { InvalidArgumentError, NotFoundError, orAbsent } from '../core/index.js';
import { systemDomain } from '../model/index.js';

/**
 * What `berth logs` and `berth exec` name, resolved through the BBS: an app is a DesiredLRP's
 * process_guid, or `SYSTEM/SERVICE[/...]`, a system service, whose DesiredLRPs are
 * `system.seg.seg.<version>` (model/instance-names.ts: serviceProcessGuid) and, for sidecar
 * units, `<version>.uN`, or, for a sidecar in its principal's pod (`colocate: pod`), the
 * principal's DesiredLRPs with the sidecar's app; a task is its task_guid.
 */
export type AppRef = { readonly app: string } | { readonly task: string };

/** One container to read or exec into: its guid on the cell, its cell, and its label `[APP/INDEX]`. */
export interface InstanceTarget {
  readonly guid: string;
  readonly cell_id: string;
  readonly source: string;
  readonly index?: number;
  readonly state: string;
  /** The app of the container's pod to read or exec into; absent: its own (first) app. */
  readonly app?: string;
}

/**
 * The process guids a name stands for now (a service has one per version during a rollout); a
 * pod sidecar's are its principal's, with the app it is in their pods.
 */
export async function appProcessGuids(
  store: BbsStore,
  app: string,
): Promise<{ guid: string; label: string; app?: string }[]> {
  if (!app.includes('/')) return [{ guid: app, label: app }];
  const [system, ...path] = app.split('/');
  if (!system || path.length === 0 || path.some((s) => s === ''))
    throw new InvalidArgumentError(`Invalid app "${app}": expected APP or SYSTEM/SERVICE`, { field: 'app' });
  const prefix = `${system}.${path.join('.')}.`;
  const versions = /^[0-9a-f]+(\.u\d+)?$/;
  const desired = await store.listDesiredLRPs();
  const own = desired
    .filter((d) => d.process_guid.startsWith(prefix) && versions.test(d.process_guid.slice(prefix.length)))
    .map((d) => ({ guid: d.process_guid, label: app }));
  if (own.length > 0) return own;
  // No LRP of its own: a sidecar in its principal's pod, which names the service it is.
  const service = `/${path.join('/')}`;
  const pods: { guid: string; label: string; app: string }[] = [];
  for (const d of desired) {
    if (d.domain !== systemDomain(system)) continue;
    const sidecar = d.sidecars?.find((s) => s.service === service);
    if (sidecar) pods.push({ guid: d.process_guid, label: app, app: sidecar.name });
  }
  return pods;
}

/**
 * The containers of an app or task that exist on a cell now: LRP instances CLAIMED or RUNNING
 * (and evacuating copies, still running on the cell they leave), a task RUNNING (or, with
 * `finished`, COMPLETED on its cell). `index` narrows an app to one index.
 */
export async function instanceTargets(
  store: BbsStore,
  ref: AppRef,
  options: { readonly index?: number | undefined; readonly finished?: boolean } = {},
): Promise<InstanceTarget[]> {
  if ('task' in ref) {
    const task = await orAbsent(store.getTask({ task_guid: ref.task }));
    if (!task?.cell_id) return [];
    if (task.state !== 'RUNNING' && !(options.finished && task.state === 'COMPLETED')) return [];
    return [{ guid: task.task_guid, cell_id: task.cell_id, source: task.task_guid, state: task.state }];
  }
  const targets: InstanceTarget[] = [];
  for (const { guid, label, app } of await appProcessGuids(store, ref.app)) {
    for (const lrp of await store.listActualLRPs({ process_guid: guid })) {
      if (options.index !== undefined && lrp.index !== options.index) continue;
      if (!lrp.cell_id || (lrp.state !== 'RUNNING' && lrp.state !== 'CLAIMED')) continue;
      targets.push({
        guid: lrp.instance_guid,
        cell_id: lrp.cell_id,
        source: `${label}/${lrp.index}`,
        index: lrp.index,
        state: lrp.state,
        ...(app !== undefined ? { app } : {}),
      });
    }
  }
  return targets;
}

/** Whether the app or task exists at all: what tells a 404 from an app with nothing running. */
export async function refExists(store: BbsStore, ref: AppRef): Promise<boolean> {
  if ('task' in ref) return (await orAbsent(store.getTask({ task_guid: ref.task }))) !== undefined;
  for (const { guid } of await appProcessGuids(store, ref.app))
    if ((await orAbsent(store.getDesiredLRP({ process_guid: guid }))) !== undefined) return true;
  return false;
}

/** The cells by id, to reach each instance's rep. */
export async function cellsById(store: BbsStore): Promise<Map<string, CellPresence>> {
  return new Map((await store.listCells()).map((c) => [c.cell_id, c]));
}

/** A missing app or task, in the words of the request. */
export function missingRef(ref: AppRef): NotFoundError {
  return 'task' in ref ? new NotFoundError('task', ref.task) : new NotFoundError('app', ref.app);
}
