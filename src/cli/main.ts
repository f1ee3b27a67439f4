import type { CommandSpec } from './command.js';
import { exitAfterDrain, runSpec } from './command-runner.js';

type Loader = () => Promise<{ readonly commands: readonly CommandSpec[] }>;

/**
 * Command name → module that defines it. Modules load lazily so `berth run` pays only for what
 * `run` needs; a command group (`image`) shares one module.
 */
const modules: Readonly<Record<string, Loader>> = {
  version: () => import('./version-command.js'),
  cell: () => import('./cell-command.js'),
  up: () => import('./up-command.js'),
  image: () => import('./image-commands.js'),
  server: () => import('./server-command.js'),
  task: () => import('./task-commands.js'),
  lrp: () => import('./lrp-commands.js'),
  cells: () => import('./lrp-commands.js'),
  history: () => import('./history-commands.js'),
  ps: () => import('./history-commands.js'),
  events: () => import('./history-commands.js'),
  subscribe: () => import('./history-commands.js'),
  token: () => import('./history-commands.js'),
  prepare: () => import('./pod-commands.js'),
  run: () => import('./pod-commands.js'),
  'run-prepared': () => import('./pod-commands.js'),
  status: () => import('./pod-commands.js'),
  list: () => import('./pod-commands.js'),
  logs: () => import('./pod-commands.js'),
  enter: () => import('./pod-commands.js'),
  stop: () => import('./pod-commands.js'),
  rm: () => import('./pod-commands.js'),
  gc: () => import('./pod-commands.js'),
  deploy: () => import('./system-commands.js'),
  teardown: () => import('./system-commands.js'),
  system: () => import('./system-commands.js'),
};

const helpText = `berth — a container orchestrator

Usage: berth COMMAND [OPTIONS] [ARGS]

Pods on this machine (no daemon; state lives in --dir, env BERTH_DIR, default /var/lib/berth):
  image import|import-rootfs|list|rm   manage the local image store
  image push|pull NAME[:TAG]           copy an image to or from a berth server's registry
  image prune                          delete blobs and rootfs dirs nothing uses
  prepare IMAGE [-- ARGS]              create a pod ready to run, print its UUID
  run [--rm] [--detach] IMAGE [-- ARGS] run a pod
  run-prepared UUID                    run a prepared pod
  status [--wait[=TIMEOUT]] UUID       show a pod's state
  list                                 list pods
  logs [-f] UUID                       show a pod's output
  enter UUID -- CMD                    run a command inside a running pod
  stop [--timeout S] UUID              stop a running pod
  rm UUID                              remove a pod that is not running
  gc                                   mark exited pods and sweep old garbage

The cluster (talks to a server: --server URL, env BERTH_SERVER, default http://127.0.0.1:8889):
  task run [--wait] [--result-file P] [--callback URL] IMAGE [-- CMD]
                                       run a one-off task; prints its guid (--wait: its result)
  task list|get GUID|cancel GUID|rm GUID
                                       list, show (with callback deliveries), cancel, remove tasks
  lrp desire FILE.yaml|json            desire a long-running process
  lrp list|get GUID|scale GUID N|rm GUID
                                       list, show (with instances), scale, remove LRPs
  cells                                list the live cells

Cluster history (--server URL, env BERTH_SERVER; token from BERTH_TOKEN or <dir>/admin.token):
  ps [--status S] [--system N]         every container across the cluster
  history ID                           a container's status and every recorded change
  events [--follow]                    container status changes from the event bus
  subscribe --status S,S URL           webhook on status changes
  token create --role R [--name N]     create an API token (admin)

Systems (--server URL, env BERTH_SERVER; token from BERTH_TOKEN or <dir>/admin.token):
  deploy FILE [--path P] [--wait]     deploy a system definition; prints the deploy id
  teardown SYSTEM [--wait]             tear a system down
  system list                          systems and their states
  system status SYSTEM [--format json] services, units, cells, relations

Run "berth COMMAND --help" for a command's flags.
`;

function findSpec(
  commands: readonly CommandSpec[],
  words: readonly string[],
): { spec: CommandSpec; used: number } | undefined {
  const two = commands.find((c) => c.name === `${words[0]} ${words[1]}`);
  if (two) return { spec: two, used: 2 };
  const one = commands.find((c) => c.name === words[0]);
  return one ? { spec: one, used: 1 } : undefined;
}

export async function main(argv: readonly string[]): Promise<number> {
  const [first] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    process.stdout.write(helpText);
    return first === undefined ? 2 : 0;
  }
  const load = modules[first];
  if (!load) {
    process.stderr.write(`berth: unknown command "${first}"\n\n${helpText}`);
    return 2;
  }
  const { commands } = await load();
  const found = findSpec(commands, argv);
  if (!found) {
    const group = commands.filter((c) => c.name.startsWith(`${first} `));
    process.stderr.write(
      `berth: unknown command "${argv.slice(0, 2).join(' ')}"\n${group.map((c) => `  ${c.usage}\n`).join('')}`,
    );
    return 2;
  }
  return runSpec(found.spec, argv.slice(found.used));
}

/** The process entry (bin/berth) for every command the pod bundle does not serve. */
export async function runAndExit(argv: readonly string[]): Promise<never> {
  return exitAfterDrain(await main(argv));
}
