import type { CommandEntry, FlagSpecs } from './command.js';
import { durationFlag, formatFlags, noLegendFlag, serverFlags } from './command-flags.js';
import { appFlags, appSeparator } from './pod-app-flags.js';
import { clusterLogFlags } from './stream-command-table.js';

/** Pod commands: this machine, no daemon. Their handlers are pod-commands.ts (the pod bundle). */
const pods = () => import('./pod-commands.js');

const podFlags: FlagSpecs = {
  name: { type: 'string', valueName: 'NAME', description: "The pod's name (shown by list)" },
  ...appFlags,
  'exit-on-first': {
    type: 'boolean',
    description: 'A pod of several apps ends when its first app exits, stopping the others',
  },
  memory: { type: 'string', short: 'm', valueName: 'SIZE', description: 'Memory limit (e.g. 256m, 1g)' },
  'pids-limit': {
    type: 'string',
    valueName: 'N',
    default: '2048',
    description: 'Most processes at once; 0 or -1 for no limit',
  },
  'log-size-max': { type: 'string', valueName: 'SIZE', description: 'Rotate the pod log past this size' },
  net: { type: 'string', valueName: 'private|host|none', default: 'private', description: 'Network mode' },
  publish: {
    type: 'string',
    short: 'p',
    multiple: true,
    valueName: 'HOSTPORT:PORT',
    description: 'Publish a pod port on the host (private network only)',
  },
};

const detachFlags: FlagSpecs = {
  rm: { type: 'boolean', description: 'Remove the pod when it exits' },
  detach: { type: 'boolean', short: 'd', description: 'Start in the background and print the UUID' },
};

const uuid = { min: 1, max: 1, names: 'UUID' } as const;

/** More apps of the pod after rkt's separator, each with its own app flags. */
const appsRest = `ARGS... [${appSeparator} [APP FLAGS] IMAGE [-- ARGS...]]...`;

const appFlag: FlagSpecs = {
  app: { type: 'string', valueName: 'NAME', description: 'The app of the pod (default: its first)' },
};

export const podCommandTable: readonly CommandEntry[] = [
  {
    name: 'prepare',
    summary:
      'Create a pod from an image (or several, one app each), ready for run-prepared; prints its UUID.',
    flags: podFlags,
    positionals: { min: 1, max: 1, names: 'IMAGE' },
    rest: appsRest,
    appSeparator,
    load: pods,
  },
  {
    name: 'run',
    summary:
      'Run a pod of one app, or several (---). In the foreground it streams the output and exits with its code.',
    flags: { ...detachFlags, ...podFlags },
    positionals: { min: 1, max: 1, names: 'IMAGE' },
    rest: appsRest,
    appSeparator,
    outlivesReader: true,
    load: pods,
  },
  {
    name: 'run-prepared',
    summary: 'Run a prepared pod (exactly one of several racing callers wins).',
    flags: detachFlags,
    positionals: uuid,
    outlivesReader: true,
    load: pods,
  },
  {
    name: 'status',
    summary: "Show a pod's state; with --wait block until it exits and exit with the app's code.",
    flags: {
      wait: {
        type: 'string',
        optionalValue: true,
        valueName: 'TIMEOUT',
        description: 'Block until the pod exits (at most TIMEOUT), then exit with its code',
      },
      ...formatFlags(['text', 'json']),
    },
    positionals: uuid,
    load: pods,
  },
  {
    name: 'list',
    summary: 'List pods on this machine.',
    flags: { ...formatFlags(['table', 'json']), ...noLegendFlag },
    load: pods,
  },
  {
    name: 'logs',
    summary:
      "Print a pod's output, or a cluster app's (APP, SYSTEM/SERVICE, --task GUID) from every instance; with -f keep following. NAME is a cluster app when --server or --task is given, it has a /, or it is no pod in --dir.",
    flags: {
      follow: {
        type: 'boolean',
        short: 'f',
        description: 'Keep following (a pod: until it exits; an app: across restarts, until Ctrl-C)',
      },
      ...appFlag,
      ...clusterLogFlags,
      ...serverFlags,
    },
    positionals: { min: 0, max: 1, names: '[POD|APP|SYSTEM/SERVICE]' },
    // One row, two worlds: logs-command.ts's handler tells a local pod from a cluster app.
    load: () => import('./logs-command.js'),
  },
  {
    name: 'enter',
    summary: 'Run a command inside a running pod (runc exec).',
    flags: appFlag,
    positionals: uuid,
    rest: 'CMD [ARGS...]',
    load: pods,
  },
  {
    name: 'stop',
    summary: 'Stop a running pod: SIGTERM, then SIGKILL after the timeout.',
    flags: {
      timeout: {
        type: 'string',
        short: 't',
        valueName: 'SECONDS',
        default: '10',
        description: 'Seconds between SIGTERM and SIGKILL',
      },
    },
    positionals: uuid,
    load: pods,
  },
  {
    name: 'rm',
    summary: 'Remove a pod that is not running.',
    positionals: { min: 1, max: 1000, names: 'UUID...' },
    load: pods,
  },
  {
    name: 'gc',
    summary: 'Mark exited pods and failed prepares, then delete garbage older than the grace period.',
    flags: {
      'grace-period': durationFlag('Delete garbage older than this', '30m'),
      'expire-prepared': durationFlag('Discard prepared pods never run after this', '24h'),
      'mark-only': { type: 'boolean', description: 'Mark, delete nothing' },
    },
    load: pods,
  },
];
