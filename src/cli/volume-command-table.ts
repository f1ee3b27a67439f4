import type { CommandEntry } from './command.js';
import { formatFlags, noLegendFlag, serverFlags } from './command-flags.js';

/** Named volumes on this machine (no daemon): kept across pods, `-v NAME:/path` mounts one. */
const volumes = () => import('./volume-commands.js');

const name = { min: 1, max: 1, names: 'NAME' } as const;
/** The cluster's named volumes, through the server. */
const clusterPins = () => import('./volume-pin-commands.js');

export const volumeCommandTable: readonly CommandEntry[] = [
  {
    name: 'volume create',
    summary: 'Make a named volume (kept across pods until removed); prints its name.',
    positionals: name,
    load: volumes,
  },
  {
    name: 'volume list',
    summary: 'List the named volumes of this machine.',
    flags: { ...formatFlags(['table', 'json']), ...noLegendFlag },
    load: volumes,
  },
  {
    name: 'volume inspect',
    summary: 'Show a named volume: where its data is, which pods use it.',
    positionals: name,
    load: volumes,
  },
  {
    name: 'volume rm',
    summary: 'Remove a named volume and its data; refused while a pod (even an exited one) uses it.',
    positionals: { min: 1, max: 1000, names: 'NAME...' },
    load: volumes,
  },
  {
    name: 'volume pins',
    summary: "List the cluster's named volumes: the cell holding each instance's data, where it restarts.",
    flags: {
      domain: { type: 'string', valueName: 'D', description: 'Only this domain (a system: system-NAME)' },
      cell: { type: 'string', valueName: 'CELL', description: 'Only volumes on this cell' },
      ...formatFlags(['table', 'json']),
      ...noLegendFlag,
      ...serverFlags,
    },
    load: clusterPins,
  },
  {
    name: 'volume unpin',
    summary:
      "Release a domain's volume pins (operators): its instances may start on another cell, with fresh volumes.",
    flags: {
      volume: { type: 'string', valueName: 'V', description: 'Only this volume' },
      index: { type: 'string', valueName: 'N', description: 'Only this instance index' },
      ...serverFlags,
    },
    positionals: { min: 1, max: 1, names: 'DOMAIN' },
    load: clusterPins,
  },
];
