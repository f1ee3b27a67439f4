import type { CommandEntry } from './command.js';
import { formatFlags, noLegendFlag } from './command-flags.js';

/** Named volumes on this machine (no daemon): kept across pods, `-v NAME:/path` mounts one. */
const volumes = () => import('./volume-commands.js');

const name = { min: 1, max: 1, names: 'NAME' } as const;

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
];
