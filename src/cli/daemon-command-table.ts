import type { CommandEntry, FlagSpecs } from './command.js';
import { durationFlag } from './command-flags.js';

/** The router a server (and `berth up`) runs beside itself (issue 22). */
const routerFlags: FlagSpecs = {
  'router-listen': {
    type: 'string',
    valueName: 'HOST:PORT',
    default: '127.0.0.1:8890 (port 0 when --listen has port 0)',
    description: 'Where the router beside the server listens: apps at http://HOSTNAME:PORT/ by their routes',
  },
  'no-router': { type: 'boolean', description: 'Run no router beside the server (run `berth router` apart)' },
};

const crashBackoffFlags: FlagSpecs = {
  'crash-backoff-base': durationFlag('First restart delay of a crashing instance (doubles per crash)', '30s'),
  'crash-backoff-max': durationFlag('Longest restart delay of a crashing instance', '16m'),
};

/** Long-running processes (the server, a cell, both at once) and the version. */
export const daemonCommandTable: readonly CommandEntry[] = [
  {
    name: 'server',
    summary:
      'Run the BBS: the cluster state store and its HTTP API (SQLite in the data dir, or PostgreSQL). Several servers on one PostgreSQL share the work; singletons run in one of them.',
    flags: {
      listen: {
        type: 'string',
        valueName: 'HOST:PORT',
        default: '127.0.0.1:8889',
        description: 'Address to listen on (port 0: any; the URL is the first stdout line)',
      },
      db: {
        type: 'string',
        valueName: 'PATH|postgres://…',
        default: '<dir>/bbs.sqlite3',
        description: 'The database',
      },
      'db-pool-size': {
        type: 'string',
        valueName: 'N',
        default: '30',
        description:
          'PostgreSQL connections this server keeps open (a transaction holds one for all its round trips)',
      },
      auth: {
        type: 'string',
        valueName: 'tokens|none',
        default: 'tokens',
        description: 'Require bearer tokens (the first start writes <dir>/admin.token)',
      },
      'lease-ttl': durationFlag('Lease of the singletons (auctioneer, converger) among servers', '15s'),
      'event-retention': durationFlag('How long the event log keeps events', '24h'),
      'event-poll': durationFlag(
        "How often event streams poll the database for other servers' events",
        '500ms',
      ),
      'convergence-interval': durationFlag('How often the converger runs', '30s'),
      'auction-interval': durationFlag('How often the auctioneer places pending work', '500ms'),
      ...crashBackoffFlags,
      'unclaimed-timeout': durationFlag('Start requests unclaimed this long are placed again', '30s'),
      'task-kick-interval': durationFlag('How often pending tasks are offered again', '30s'),
      'task-pending-limit': durationFlag('A task pending this long fails', '30m'),
      'task-completed-ttl': durationFlag('A completed task nobody resolves is deleted after this', '2m'),
      'max-heartbeats-per-second': {
        type: 'string',
        valueName: 'N',
        default: '50',
        description:
          "Heartbeats all cells together may send per second: past it each cell's presence TTL grows (as Nomad's max_heartbeats_per_second)",
      },
      'max-cell-passes-per-second': {
        type: 'string',
        valueName: 'N',
        default: '20',
        description:
          "Safety-net passes all cells together may run per second: past it each cell's poll interval grows",
      },
      'max-pending-starts': {
        type: 'string',
        valueName: 'N',
        default: '1000000',
        description:
          'Start requests (LRP instances, tasks) waiting to be placed at which creates are answered 429 with Retry-After',
      },
      'allow-private-callbacks': {
        type: 'boolean',
        description:
          'Allow task callbacks and webhooks to loopback and link-local addresses (refused by default: SSRF)',
      },
      'callback-attempts': {
        type: 'string',
        valueName: 'N',
        default: '5',
        description: 'Deliveries of a task callback before giving up',
      },
      'callback-backoff-base': durationFlag('First retry delay of a task callback', '1s'),
      'callback-backoff-max': durationFlag('Longest retry delay of a task callback', '30s'),
      'callback-timeout': durationFlag('Timeout of one task callback delivery', '10s'),
      ...routerFlags,
    },
    longRunning: true,
    load: () => import('./server-command.js'),
  },
  {
    name: 'router',
    summary:
      "Run a router: the HTTP routes of every LRP from a server's BBS events, and the proxy that sends each request to a running instance (round robin, WebSockets, /metrics).",
    flags: {
      bbs: {
        type: 'string',
        valueName: 'URL',
        default: '$BERTH_SERVER or http://127.0.0.1:8889',
        description: 'The berth server whose BBS the router follows',
      },
      token: {
        type: 'string',
        valueName: 'TOKEN',
        default: '$BERTH_TOKEN, else <dir>/admin.token for a server on this machine only',
        description: 'Bearer token for the server (a viewer token is enough)',
      },
      listen: {
        type: 'string',
        valueName: 'HOST:PORT',
        default: '127.0.0.1:8890',
        description: 'Address to listen on (port 0: any; the URL is the first stdout line)',
      },
      balance: {
        type: 'string',
        valueName: 'round-robin|least-connections',
        default: 'round-robin',
        description: "How an instance is picked from a route's pool",
      },
    },
    longRunning: true,
    load: () => import('./router-command.js'),
  },
  {
    name: 'cell',
    summary: "Run a cell: the rep and executor of this machine, registered with a berth server's BBS.",
    flags: {
      bbs: {
        type: 'string',
        valueName: 'URL[,URL…]',
        default: '$BERTH_SERVER or http://127.0.0.1:8889',
        description:
          'The berth server whose BBS the cell joins; several (servers on one PostgreSQL): the next when one does not answer',
      },
      token: {
        type: 'string',
        valueName: 'TOKEN',
        default: '$BERTH_TOKEN, else <dir>/admin.token for a server on this machine only',
        description: 'Bearer token for the server',
      },
      id: { type: 'string', valueName: 'ID', default: 'the hostname', description: "The cell's id" },
      zone: { type: 'string', valueName: 'Z', default: 'z1', description: "The cell's availability zone" },
      memory: {
        type: 'string',
        valueName: 'MB',
        default: "this machine's memory less a tenth (at least 512 MB)",
        description: 'Memory offered to work',
      },
      disk: {
        type: 'string',
        valueName: 'MB',
        default: "the data dir's free disk less a tenth (at least 1 GB)",
        description: 'Disk offered to work',
      },
      containers: { type: 'string', valueName: 'N', default: '100', description: 'Most containers at once' },
      'max-concurrent-starts': {
        type: 'string',
        valueName: 'N',
        default: "this machine's cores",
        description: 'Most containers starting at once (the rest wait their turn)',
      },
      listen: {
        type: 'string',
        valueName: 'HOST:PORT',
        default: '127.0.0.1:0',
        description: "The rep's listen address",
      },
      address: {
        type: 'string',
        valueName: 'ADDR',
        default: '127.0.0.1',
        description: 'Address other machines reach this cell at',
      },
      'poll-interval': durationFlag('How often the rep reconciles', '5s'),
      'presence-ttl': durationFlag("Lifetime of the cell's presence record", '30s'),
      'evacuation-timeout': durationFlag('Longest a drain waits for instances to move', '10m'),
      ...crashBackoffFlags,
      ports: {
        type: 'string',
        valueName: 'FROM-TO',
        default: '61000-61999',
        description: 'Host ports given to instances',
      },
      tags: { type: 'string', valueName: 'a,b', description: 'Placement tags the cell offers' },
      'optional-tags': { type: 'string', valueName: 'c,d', description: 'Optional placement tags' },
      'log-size-max': {
        type: 'string',
        valueName: 'SIZE',
        description: 'Rotate container logs past this size',
      },
    },
    longRunning: true,
    load: () => import('./cell-command.js'),
  },
  {
    name: 'up',
    summary:
      'Run berth on this machine: the server (BBS, auctioneer, converger, registry, API, console) on the embedded SQLite, one local cell, and the example system.',
    flags: {
      listen: {
        type: 'string',
        valueName: 'HOST:PORT',
        default: '127.0.0.1:8889',
        description: "The server's listen address",
      },
      memory: {
        type: 'string',
        valueName: 'MB',
        default: "this machine's memory less a tenth (at least 512 MB)",
        description: 'Memory the local cell offers',
      },
      disk: {
        type: 'string',
        valueName: 'MB',
        default: "the data dir's free disk less a tenth (at least 1 GB)",
        description: 'Disk the local cell offers',
      },
      'no-example': { type: 'boolean', description: 'Do not deploy the example system' },
      'convergence-interval': durationFlag('How often the converger runs', '10s'),
      'poll-interval': durationFlag('How often the local rep reconciles', '2s'),
      auth: {
        type: 'string',
        valueName: 'tokens|none',
        default: 'tokens',
        description: 'Require bearer tokens',
      },
      ...routerFlags,
      verbose: {
        type: 'boolean',
        short: 'v',
        description: 'Also print every request log line (always in <dir>/logs/up.log)',
      },
    },
    longRunning: true,
    load: () => import('./up-command.js'),
  },
  {
    name: 'version',
    summary: 'Print the berth version (also: berth --version).',
    load: () => import('./version-command.js'),
  },
];
