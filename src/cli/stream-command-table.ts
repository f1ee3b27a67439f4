import type { CommandEntry, FlagSpecs } from './command.js';
import { serverFlags } from './command-flags.js';

/**
 * Logs and exec across the cluster (issue 22; docs/logs-and-exec.md). `berth logs` keeps its one
 * row among the pod commands (pod-command-table.ts) with these flags added: its handler
 * (logs-command.ts) tells a pod on this machine from a cluster app.
 */
export const clusterLogFlags: FlagSpecs = {
  task: { type: 'string', valueName: 'GUID', description: "A task's output instead of an app's" },
  index: { type: 'string', valueName: 'N', description: 'Only this instance of the app (cluster apps)' },
  since: {
    type: 'string',
    valueName: 'DURATION',
    description: 'Only lines of the last DURATION, e.g. 10m (cluster apps)',
  },
  tail: {
    type: 'string',
    valueName: 'N',
    description: 'Only the last N lines of each instance, then follow (cluster apps)',
  },
  timestamps: { type: 'boolean', description: 'Start each line with the time it was written' },
};

export const streamCommandTable: readonly CommandEntry[] = [
  {
    name: 'exec',
    summary:
      "Run a command in a running instance (APP/INDEX, SYSTEM/SERVICE/INDEX) or task (--task GUID) on its cell, through the server; exits with the command's code. Operators only.",
    flags: {
      interactive: { type: 'boolean', short: 'i', description: "Send this terminal's stdin to the command" },
      tty: {
        type: 'boolean',
        short: 't',
        description: 'Give the command a terminal (implies -i); window resizes follow',
      },
      task: { type: 'string', valueName: 'GUID', description: 'A running task instead of an instance' },
      ...serverFlags,
    },
    positionals: { min: 0, max: 1, names: '[APP/INDEX]' },
    rest: 'CMD [ARGS...]',
    outlivesReader: true,
    load: () => import('./exec-command.js'),
  },
];
