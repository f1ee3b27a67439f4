import { BerthError } from '../../core/index.js';
import type { BbsStore, OwnerOfRequest } from '../bbs-store.js';

/**
 * What a public writer tried on a system's record, and what the system's user runs instead
 * (seed 004: a system's resources change only through the system's own actions).
 */
export type OwnedWrite =
  | 'desire-lrp'
  | 'update-lrp'
  | 'remove-lrp'
  | 'desire-task'
  | 'cancel-task'
  | 'resolve-task'
  | 'delete-task';

const instead: Readonly<Record<OwnedWrite, (system: string) => string>> = {
  'desire-lrp': () => 'add the service to the definition and run `berth deploy`',
  'update-lrp': (s) =>
    `scale it with \`berth service scale ${s}/<service> N\`, or change the definition and run \`berth deploy\``,
  'remove-lrp': (s) =>
    `drop the service from the definition and run \`berth deploy\`, or \`berth teardown ${s}\``,
  'desire-task': () => 'add the job to the definition and run `berth deploy`',
  'cancel-task': (s) => `its jobs follow the definition: \`berth deploy\`, or \`berth teardown ${s}\``,
  'resolve-task': (s) => `its jobs follow the definition: \`berth deploy\`, or \`berth teardown ${s}\``,
  'delete-task': (s) => `its jobs follow the definition: \`berth deploy\`, or \`berth teardown ${s}\``,
};

const verb: Readonly<Record<OwnedWrite, string>> = {
  'desire-lrp': 'desire an LRP',
  'update-lrp': 'update LRP',
  'remove-lrp': 'remove LRP',
  'desire-task': 'desire a task',
  'cancel-task': 'cancel task',
  'resolve-task': 'resolve task',
  'delete-task': 'delete task',
};

/**
 * Refuses (409 `conflict`) a public write to an LRP or task whose domain a system owns, naming the
 * system and the command to use instead. The system's own actions write through the store in
 * process and never pass here. A record that does not exist is nobody's: the route's own
 * not-found answer follows.
 */
export async function refuseSystemOwned(
  store: BbsStore,
  write: OwnedWrite,
  target: OwnerOfRequest,
): Promise<void> {
  const { owner } = await store.ownerOf(target);
  if (owner === null) return;
  const subject =
    'process_guid' in target
      ? ` "${target.process_guid}"`
      : 'task_guid' in target
        ? ` "${target.task_guid}"`
        : ` in domain "${target.domain}"`;
  throw new BerthError(
    'conflict',
    `Cannot ${verb[write]}${subject}: it belongs to system "${owner}", which alone changes it; ${instead[write](owner)}`,
    { system: owner, write, ...target },
  );
}
