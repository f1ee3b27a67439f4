import type { CommandEntry, FlagSpec, FlagSpecs } from './command.js';
import { formatFlags, noLegendFlag, serverFlags } from './command-flags.js';

/** Commands that talk to a berth server. Each loads its handler module, and only it, when run. */
const tasks = () => import('./task-commands.js');
const lrps = () => import('./lrp-commands.js');
const history = () => import('./history-commands.js');
const systems = () => import('./system-commands.js');
const deployHistory = () => import('./deploy-history-commands.js');

const guid = { min: 1, max: 1, names: 'GUID' } as const;
const domainFlag: FlagSpecs = { domain: { type: 'string', valueName: 'D', description: 'Only this domain' } };
/** Where a task's outputs are unpacked (`task outputs`, and `task run --wait`). */
const outputDirFlag: FlagSpec = {
  type: 'string',
  short: 'o',
  valueName: 'DIR',
  default: './GUID-outputs',
  description: 'Where to unpack them (created if missing)',
};

const entities = () => import('./entity-commands.js');
const forceFlag: FlagSpecs = {
  force: {
    type: 'boolean',
    description: "Do the agents' part in the server instead of waiting for them; recorded in the history",
  },
};

export const taskCommandTable: readonly CommandEntry[] = [
  {
    name: 'task run',
    summary:
      'Run a one-off task on the cluster. Prints the task_guid; with --wait, waits for it, prints its result (the --result-file contents) and exits 0 if it succeeded, 1 with the failure reason on stderr if not. --wait also resolves and deletes the task unless --keep.',
    flags: {
      wait: {
        type: 'string',
        optionalValue: true,
        valueName: 'TIMEOUT',
        description: 'Wait for the result (at most TIMEOUT)',
      },
      keep: { type: 'boolean', description: 'With --wait: keep the task record instead of deleting it' },
      'result-file': {
        type: 'string',
        valueName: 'PATH',
        description: "File in the container whose contents are the task's result",
      },
      callback: { type: 'string', valueName: 'URL', description: 'POST the finished task to this URL' },
      memory: { type: 'string', valueName: 'MB', description: 'Memory limit in MB' },
      disk: { type: 'string', valueName: 'MB', description: 'Disk limit in MB' },
      env: {
        type: 'string',
        short: 'e',
        multiple: true,
        valueName: 'K=V',
        description: 'Set an environment variable',
      },
      domain: { type: 'string', valueName: 'D', default: 'berth', description: "The task's domain" },
      guid: { type: 'string', valueName: 'GUID', default: 'a generated one', description: "The task's guid" },
      tag: {
        type: 'string',
        multiple: true,
        valueName: 'TAG',
        description: 'Run only on cells with this placement tag',
      },
      output: {
        type: 'string',
        multiple: true,
        valueName: 'NAME=PATH',
        description:
          'Keep this file or directory of the container as output NAME when the task ends (berth task outputs)',
      },
      'outputs-max-bytes': {
        type: 'string',
        valueName: 'N',
        default: '67108864 (64 MiB)',
        description: 'Bytes of output the task may leave; more fails the task',
      },
      'output-dir': {
        ...outputDirFlag,
        description: 'With --wait and --output: unpack the outputs here before the task is deleted',
      },
      'poll-interval': {
        type: 'string',
        valueName: 'DURATION',
        default: '250ms',
        description: 'How often --wait asks',
      },
      ...serverFlags,
    },
    positionals: { min: 1, max: 1, names: 'IMAGE' },
    rest: 'CMD [ARGS...]',
    load: tasks,
  },
  {
    name: 'task list',
    summary: 'List tasks (all states, or --state).',
    flags: {
      ...formatFlags(['table', 'json']),
      state: {
        type: 'string',
        valueName: 'PENDING|RUNNING|COMPLETED|RESOLVING',
        description: 'Only tasks in this state',
      },
      ...domainFlag,
      ...noLegendFlag,
      ...serverFlags,
    },
    load: tasks,
  },
  {
    name: 'task get',
    summary: 'Show one task as JSON, with its completion-callback delivery log (`deliveries`).',
    flags: serverFlags,
    positionals: guid,
    load: tasks,
  },
  {
    name: 'task cancel',
    summary:
      'Cancel a task: it becomes COMPLETED, failed, "task was cancelled"; a running container is destroyed by its cell.',
    flags: serverFlags,
    positionals: guid,
    load: tasks,
  },
  {
    name: 'task outputs',
    summary:
      "Download a task's outputs (its --output files and directories, collected by its cell when it ended) and unpack them into DIR, one entry per output name; prints each file written. Nothing in DIR is overwritten.",
    flags: {
      'output-dir': outputDirFlag,
      ...serverFlags,
    },
    positionals: guid,
    load: tasks,
  },
  {
    name: 'task rm',
    summary:
      'Remove a finished task (resolve, then delete). A PENDING or RUNNING task is refused unless --force, which cancels it first.',
    flags: {
      force: { type: 'boolean', description: 'Cancel a PENDING or RUNNING task first' },
      ...serverFlags,
    },
    positionals: guid,
    load: tasks,
  },
];

export const lrpCommandTable: readonly CommandEntry[] = [
  {
    name: 'lrp desire',
    summary:
      'Desire a long-running process from a YAML or JSON file of DesiredLRP fields (process_guid and image required; domain defaults to "berth", instances to 1). Its domain is marked fresh: the file is the whole desired state of it.',
    flags: serverFlags,
    positionals: { min: 1, max: 1, names: 'FILE.yaml|FILE.json' },
    // Its own module: YAML and the DesiredLRP schema load only for this command.
    load: () => import('./lrp-desire-command.js'),
  },
  {
    name: 'lrp list',
    summary: 'List DesiredLRPs with how many of their instances run.',
    flags: { ...formatFlags(['table', 'json']), ...domainFlag, ...noLegendFlag, ...serverFlags },
    load: lrps,
  },
  {
    name: 'lrp get',
    summary: 'Show a DesiredLRP and its ActualLRPs (evacuating copies included).',
    flags: { ...formatFlags(['text', 'json']), ...serverFlags },
    positionals: guid,
    load: lrps,
  },
  {
    name: 'lrp scale',
    summary: 'Change how many instances of a DesiredLRP run (extra ones are stopped, missing ones started).',
    flags: serverFlags,
    positionals: { min: 2, max: 2, names: 'GUID N' },
    load: lrps,
  },
  {
    name: 'lrp rm',
    summary: 'Remove a DesiredLRP; all its instances are stopped.',
    flags: serverFlags,
    positionals: guid,
    load: lrps,
  },
  {
    name: 'cells',
    summary: 'List the live cells: zone, capacity, rep address, placement tags.',
    flags: { ...formatFlags(['table', 'json']), ...noLegendFlag, ...serverFlags },
    load: lrps,
  },
  {
    name: 'cell drain',
    summary: 'Evacuate a cell: it takes no new work, hands its instances to other cells, then exits.',
    flags: serverFlags,
    positionals: { min: 1, max: 1, names: 'CELL' },
    load: () => import('./cell-drain-command.js'),
  },
];

export const historyCommandTable: readonly CommandEntry[] = [
  {
    name: 'ps',
    summary: 'List every container across the cluster, newest first.',
    flags: {
      status: { type: 'string', valueName: 'S', description: 'Only containers with this status' },
      system: { type: 'string', valueName: 'NAME', description: 'Only containers of this system' },
      since: {
        type: 'string',
        valueName: 'TIME',
        description: 'Only containers with a change recorded at or after TIME (ISO-8601)',
      },
      limit: { type: 'string', valueName: 'N', default: 'all', description: 'At most N containers' },
      ...formatFlags(['table', 'json']),
      ...serverFlags,
    },
    load: history,
  },
  {
    name: 'history',
    summary:
      'Show a container: what was launched, its status, and every recorded change (who or what caused it).',
    flags: { ...formatFlags(['table', 'json']), ...serverFlags },
    positionals: { min: 1, max: 1, names: 'CONTAINER_ID' },
    load: history,
  },
  {
    name: 'events',
    summary:
      'Print container status changes from the event bus (SSE) as JSON lines; --follow keeps streaming.',
    flags: {
      follow: { type: 'boolean', short: 'f', description: 'Keep streaming until interrupted' },
      after: { type: 'string', valueName: 'EVENT_ID', description: 'Start after this event' },
      ...serverFlags,
    },
    load: history,
  },
  {
    name: 'subscribe',
    summary:
      'Subscribe a webhook URL to container status changes (retried with back-off; see its delivery log); prints its id.',
    flags: {
      status: {
        type: 'string',
        valueName: 'S,S',
        default: 'every status',
        description: 'Only these statuses',
      },
      ...serverFlags,
    },
    positionals: { min: 1, max: 1, names: 'URL' },
    load: history,
  },
  {
    name: 'token create',
    summary: 'Create an API token (admin only); prints the token once.',
    flags: {
      role: {
        type: 'string',
        valueName: 'admin|operator|viewer',
        description: "The token's role (required)",
      },
      name: { type: 'string', valueName: 'NAME', description: "The token's user name" },
      ttl: {
        type: 'string',
        valueName: 'DUR',
        description:
          'The token stops working this long after it is made (e.g. 8h, 30d); default: until revoked',
      },
      ...serverFlags,
    },
    load: history,
  },
];

const waitFlag: FlagSpecs = {
  wait: {
    type: 'boolean',
    description:
      'Wait until the action ends, showing services and instances ready/desired; exit 1 with the reason if it failed',
  },
};

const actionWaitFlags: FlagSpecs = {
  ...waitFlag,
  timeout: {
    type: 'string',
    valueName: 'DUR',
    default: '10m',
    description: 'Fail the action if it has not ended this long after it was accepted (e.g. 90s, 10m)',
  },
};

export const systemCommandTable: readonly CommandEntry[] = [
  {
    name: 'deploy',
    summary:
      'Deploy a system definition (YAML): refused with every problem listed, or at once when another action holds a conflicting lock; prints the deploy id. The deploy (and its locks) lasts until every service under its path runs its new version at its count and its jobs completed, or fails after --timeout with the reason.',
    flags: {
      path: {
        type: 'string',
        valueName: 'P',
        description: 'Deploy only the part of the system under this path',
      },
      ...actionWaitFlags,
      ...serverFlags,
    },
    positionals: { min: 1, max: 1, names: 'FILE' },
    load: systems,
  },
  {
    name: 'teardown',
    summary:
      'Tear a system down (exclusive on /: fails at once while any deploy runs); prints the action id. It lasts until everything of the system is gone. --force does not wait for unit or machine agents: the server forces every unit (seed 003), and the history says so.',
    flags: { ...forceFlag, ...actionWaitFlags, ...serverFlags },
    positionals: { min: 1, max: 1, names: 'SYSTEM' },
    load: systems,
  },
  {
    name: 'deploys',
    summary:
      "List a system's deploys and teardowns, oldest first: definition digest, who asked, when, outcome (secrets by name only).",
    flags: { ...formatFlags(['table', 'json']), ...noLegendFlag, ...serverFlags },
    positionals: { min: 1, max: 1, names: 'SYSTEM' },
    load: deployHistory,
  },
  {
    name: 'rollback',
    summary:
      'Redeploy an earlier definition of a system (default: the last succeeded deploy before the current one) as a new deploy, under the same locks; prints its id.',
    flags: { ...waitFlag, ...serverFlags },
    positionals: { min: 1, max: 2, names: 'SYSTEM [DEPLOY]' },
    load: deployHistory,
  },
  {
    name: 'system list',
    summary: 'List systems and their states.',
    flags: { ...formatFlags(['table', 'json']), ...serverFlags },
    load: systems,
  },
  {
    name: 'system status',
    summary: "A system's state, its services with their units and cells, and its relations.",
    flags: { ...formatFlags(['text', 'json']), ...serverFlags },
    positionals: { min: 1, max: 1, names: 'SYSTEM' },
    load: systems,
  },
];

/** Seed 003's per-entity commands: each an action under the intention locks of what it changes. */
const actionFlags: FlagSpecs = { ...formatFlags(['id', 'table', 'json']), ...waitFlag, ...serverFlags };

export const entityCommandTable: readonly CommandEntry[] = [
  {
    name: 'unit destroy',
    summary:
      "Destroy a unit (instance N of a service; the service path may be nested: shop/web/api/2): it goes Dying, its agent departs its relations and sets it Dead, then its instance is replaced (use service scale to run fewer). --force does not wait for the unit's agent. Prints the action id.",
    flags: { ...forceFlag, ...actionFlags },
    positionals: { min: 1, max: 1, names: 'SYSTEM/SERVICE/N' },
    load: entities,
  },
  {
    name: 'service scale',
    summary:
      'Run N instances of a service: its stored definition (what the system restores), its units and its DesiredLRP. A later deploy sets what its file says. Prints the action id.',
    flags: actionFlags,
    positionals: { min: 2, max: 2, names: 'SYSTEM/SERVICE N' },
    load: entities,
  },
  {
    name: 'service destroy',
    summary:
      "Destroy a service: its units and relations go Dying, its instances stop, and it is removed when the last reference goes (seed 003). --force does not wait for its units' agents. Prints the action id.",
    flags: { ...forceFlag, ...actionFlags },
    positionals: { min: 1, max: 1, names: 'SYSTEM/SERVICE' },
    load: entities,
  },
  {
    name: 'relation add',
    summary: 'Relate two services of a system; their placed units enter its scope through their agents.',
    flags: actionFlags,
    positionals: { min: 3, max: 3, names: 'SYSTEM /A /B' },
    load: entities,
  },
  {
    name: 'relation remove',
    summary: 'Remove a relation: Dying until every unit in its scope has departed, then removed.',
    flags: actionFlags,
    positionals: { min: 3, max: 3, names: 'SYSTEM /A /B' },
    load: entities,
  },
  {
    name: 'cell destroy',
    summary:
      "Destroy a model cell (Juju's machine): refused while units are assigned to it; it goes Dying and its machine agent sets it Dead. --force forces its units off and does not wait for its agent (for a cell whose agent is dead).",
    flags: { ...forceFlag, ...actionFlags },
    positionals: { min: 1, max: 1, names: 'CELL' },
    load: entities,
  },
];
