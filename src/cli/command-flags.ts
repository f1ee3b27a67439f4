import type { FlagSpec, FlagSpecs } from './command.js';

/** Flags of every command that talks to a berth server (the one rule: server-target.ts). */
export const serverFlags: FlagSpecs = {
  server: {
    type: 'string',
    valueName: 'URL[,URL…]',
    default: '$BERTH_SERVER or http://127.0.0.1:8889',
    description:
      'The berth server to talk to; several (servers on one PostgreSQL): the next when one does not answer',
  },
  token: {
    type: 'string',
    valueName: 'TOKEN',
    default: "$BERTH_TOKEN, else the local server's <dir>/admin.token for a server on this machine only",
    description: 'Bearer token sent to the server',
  },
};

/**
 * `--format` for a command that prints records, with `--json` as its alias. The first format is
 * the default.
 */
export function formatFlags(formats: readonly [string, ...string[]]): FlagSpecs {
  const json: FlagSpec = {
    type: 'boolean',
    description: 'Same as --format json',
    aliasOf: { flag: 'format', value: 'json' },
  };
  return {
    format: {
      type: 'string',
      valueName: formats.join('|'),
      default: formats[0],
      description: 'Output format',
    },
    ...(formats.includes('json') ? { json } : {}),
  };
}

export const noLegendFlag: FlagSpecs = {
  'no-legend': { type: 'boolean', description: 'Leave out the header line of the table' },
};

/** A duration flag (`30s`, `5m`, `1h`). */
export function durationFlag(description: string, fallback: string): FlagSpec {
  return { type: 'string', valueName: 'DURATION', default: fallback, description };
}

/** `-e K=V`, repeatable: an environment variable of the container. */
export const envFlag: FlagSpec = {
  type: 'string',
  short: 'e',
  multiple: true,
  valueName: 'K=V',
  description: 'Set an environment variable',
};
