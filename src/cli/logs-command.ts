import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import {
  BerthError,
  berthErrorFromHttp,
  InvalidArgumentError,
  isNotFound,
  parseDuration,
} from '../core/index.js';
import { PodStore } from '../runtime/index.js';
import {
  booleanOption,
  type CommandContext,
  type CommandHandler,
  dataDir,
  intOption,
  stringOption,
} from './command.js';
import { unreachableHint } from './server-client.js';
import { resolveServerTarget } from './server-target.js';

/** Flags that only a cluster app's logs take; a local pod's `berth logs` refuses them. */
const clusterOnlyFlags = ['task', 'index', 'since', 'tail'] as const;

/**
 * The one rule telling `berth logs NAME` a pod on this machine from a cluster app (docs/logs-and-exec.md):
 * cluster when `--task` or `--server` is given or NAME has a `/` (SYSTEM/SERVICE); otherwise a
 * local pod when NAME is the UUID (or unique prefix) or name of a pod in the data dir (`--dir`,
 * $BERTH_DIR); otherwise a cluster app. $BERTH_SERVER alone does not make it cluster, so a machine
 * pointed at a server still reads its own pods.
 */
export function logsTarget(values: CommandContext['values'], name: string | undefined): 'pod' | 'cluster' {
  if (stringOption(values, 'task') !== undefined || stringOption(values, 'server') !== undefined)
    return 'cluster';
  if (name === undefined)
    throw new InvalidArgumentError('berth logs needs a pod, an APP, SYSTEM/SERVICE, or --task GUID');
  if (name.includes('/')) return 'cluster';
  try {
    new PodStore(dataDir(values)).locate(name);
    return 'pod';
  } catch (err) {
    if (isNotFound(err) || (err as NodeJS.ErrnoException).code === 'ENOENT') return 'cluster';
    throw err;
  }
}

/** `[APP/INDEX] line`, with `--timestamps` the line's time first. */
export function formatLogLine(
  line: { readonly ts: string; readonly source: string; readonly line?: string; readonly error?: string },
  timestamps: boolean,
): string {
  const body = line.error !== undefined ? `(cannot read: ${line.error})` : (line.line ?? '');
  return `${timestamps ? `${line.ts} ` : ''}[${line.source}] ${body}\n`;
}

async function clusterLogs(ctx: CommandContext): Promise<number> {
  const values = ctx.values;
  const task = stringOption(values, 'task');
  const name = ctx.positionals[0];
  if (task !== undefined && name !== undefined)
    throw new InvalidArgumentError('Name an app or --task GUID, not both', { flag: 'task' });
  const q = new URLSearchParams(task !== undefined ? { task } : { app: name ?? '' });
  const index = intOption(values, 'index');
  if (index !== undefined) q.set('index', String(index));
  if (booleanOption(values, 'follow')) q.set('follow', 'true');
  const tail = intOption(values, 'tail');
  if (tail !== undefined) q.set('tail', String(tail));
  const since = stringOption(values, 'since');
  if (since !== undefined) q.set('since_ms', String(Date.now() - parseDuration(since, '--since')));
  const target = resolveServerTarget(values);
  const url = `${target.url}/v1/logs?${q}`;
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    let res: Response;
    try {
      res = await fetch(url, {
        headers: target.token ? { authorization: `Bearer ${target.token}` } : {},
        signal: abort.signal,
      });
    } catch (err) {
      if (abort.signal.aborted) return 0;
      throw new BerthError(
        'unavailable',
        `Cannot reach the berth server at ${target.url} ${unreachableHint}: ${String(err)}`,
      );
    }
    if (!res.ok || !res.body) throw berthErrorFromHttp(res.status, await res.text());
    const timestamps = booleanOption(values, 'timestamps');
    const lines = createInterface({
      input: Readable.fromWeb(res.body as never),
      crlfDelay: Number.POSITIVE_INFINITY,
    });
    try {
      for await (const text of lines) {
        if (!text) continue;
        const line = JSON.parse(text) as {
          ts: string;
          source: string;
          stream?: string;
          line?: string;
          error?: string;
        };
        // The app's stderr to ours, as `docker logs` does; a cell's error too.
        const toStderr = line.error !== undefined || line.stream === 'stderr';
        (toStderr ? ctx.stderr : ctx.stdout).write(formatLogLine(line, timestamps));
      }
    } catch (err) {
      // Ctrl-C ends a follow: the aborted body is how it ends, not an error.
      if (!abort.signal.aborted) throw err;
    }
    return 0;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

const logs: CommandHandler = {
  name: 'logs',
  async run(ctx) {
    if (logsTarget(ctx.values, ctx.positionals[0]) === 'cluster') {
      // --app picks an app inside a local multi-app pod; a cluster instance is one app.
      if (ctx.values.app !== undefined)
        throw new InvalidArgumentError(
          `--app names an app of a pod on this machine, and "${ctx.positionals[0] ?? ''}" is a cluster app`,
          { flag: 'app' },
        );
      return clusterLogs(ctx);
    }
    const clusterFlag = clusterOnlyFlags.find((f) => ctx.values[f] !== undefined);
    if (clusterFlag)
      throw new InvalidArgumentError(
        `--${clusterFlag} is for a cluster app's logs, and "${ctx.positionals[0]}" is a pod on this machine (--server URL to ask the cluster)`,
        { flag: clusterFlag },
      );
    const { commands } = await import('./pod-commands.js');
    const podLogs = commands.find((c) => c.name === 'logs');
    if (!podLogs) throw new BerthError('internal', 'The pod logs command is missing');
    return podLogs.run(ctx);
  },
};

export const commands: readonly CommandHandler[] = [logs];
