import { type ParseArgsConfig, parseArgs } from 'node:util';
import { InvalidArgumentError } from '../core/index.js';

export type OptionValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** Everything a command sees: parsed flags, positionals, and whatever followed a bare `--`. */
export interface CommandContext {
  readonly values: OptionValues;
  readonly positionals: readonly string[];
  /** Arguments after the first bare `--`, passed through untouched (e.g. the app's argv). */
  readonly rest: readonly string[];
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

/** One flag of a command, as the table declares it: parsing and `--help` both read this. */
export interface FlagSpec {
  readonly type: 'string' | 'boolean';
  /** What the flag does, for `--help` (the command-table test requires one). */
  readonly description: string;
  readonly short?: string;
  readonly multiple?: boolean;
  /** The value's placeholder in the usage line: `--memory MB`. */
  readonly valueName?: string;
  /** The default, as `--help` shows it (the handler applies it). */
  readonly default?: string;
  /** May appear bare or as `--flag=VALUE` (e.g. `--wait[=TIMEOUT]`); bare reads as `true`. */
  readonly optionalValue?: boolean;
  /** Another spelling of a value of this flag (`--json` is `--format json`): flag name → value. */
  readonly aliasOf?: { readonly flag: string; readonly value: string };
}

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** A command's handler, in its module (loaded only when the command runs). */
export interface CommandHandler {
  readonly name: string;
  run(ctx: CommandContext): Promise<number>;
}

/** One row of the command table (command-table.ts): everything but the handler's code. */
export interface CommandEntry {
  /** One or two words: `run`, `image import`. */
  readonly name: string;
  readonly summary: string;
  readonly flags?: FlagSpecs;
  readonly positionals?: { readonly min: number; readonly max: number; readonly names: string };
  /** Takes arguments after a bare `--` (the app's argv); the usage line shows this text. */
  readonly rest?: string;
  /**
   * A word that, like `--`, ends the command's own flags, and is kept at the head of `rest`
   * (`berth run IMAGE --- IMAGE2`: rkt's separator of a pod's apps).
   */
  readonly appSeparator?: string;
  /**
   * When the reader of our output goes away (`berth … | head`), the command ends as SIGPIPE ends
   * a Unix filter (exit 141), unless this is set: a foreground pod runs on to its end, its output
   * still going to the pod's log, and berth exits with the app's code.
   */
  readonly outlivesReader?: boolean;
  /** Runs until stopped (server, cell, up): its HTTP clients keep fetch's pooled connections. */
  readonly longRunning?: boolean;
  /** The module holding the handler; imported lazily so a command loads only what it needs. */
  readonly load: () => Promise<{ readonly commands: readonly CommandHandler[] }>;
}

/** Domain of the work (tasks, LRPs) desired from the CLI unless it says otherwise. */
export const defaultCliDomain = 'berth';

/** Flags every command takes. */
export const commonFlags: FlagSpecs = {
  dir: {
    type: 'string',
    valueName: 'DIR',
    default: '$BERTH_DIR or /var/lib/berth',
    description: "berth's data directory on this machine (pods, images, the local server's admin.token)",
  },
  help: { type: 'boolean', short: 'h', description: 'Show this help' },
};

const bareMarker = '\u0000bare';

/**
 * Parses argv for one command with node's own `util.parseArgs` (no third-party parser on the hot
 * path: `berth run` must start fast). Unknown flags and wrong positional counts are errors that
 * name the flag and show the usage.
 */
export function parseCommandArgs(
  entry: CommandEntry,
  argv: readonly string[],
): Omit<CommandContext, 'stdout' | 'stderr'> {
  const dashDash = argv.findIndex(
    (a) => a === '--' || (entry.appSeparator !== undefined && a === entry.appSeparator),
  );
  const own = dashDash === -1 ? [...argv] : argv.slice(0, dashDash);
  const rest = dashDash === -1 ? [] : argv.slice(argv[dashDash] === '--' ? dashDash + 1 : dashDash);
  const usage = `Usage: ${usageLine(entry)}\nRun "berth ${entry.name} --help" for its flags.`;
  if (rest.length > 0 && entry.rest === undefined) {
    throw new InvalidArgumentError(`berth ${entry.name} takes no arguments after "--"\n${usage}`);
  }
  const flags: FlagSpecs = { ...commonFlags, ...entry.flags };
  const options: NonNullable<ParseArgsConfig['options']> = {};
  for (const [name, flag] of Object.entries(flags)) {
    options[name] = {
      type: flag.type,
      ...(flag.short !== undefined ? { short: flag.short } : {}),
      ...(flag.multiple ? { multiple: true } : {}),
    };
  }
  const optionalValue = new Set(Object.keys(flags).filter((name) => flags[name]?.optionalValue));
  const rewritten = own.map((arg) =>
    optionalValue.has(arg.replace(/^--/, '')) && arg.startsWith('--') ? `${arg}=${bareMarker}` : arg,
  );
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: rewritten, options, allowPositionals: true, strict: true });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new InvalidArgumentError(`${message.replace(/\. To specify.*$/s, '')}\n${usage}`);
  }
  const values: OptionValues = { ...parsed.values };
  for (const name of optionalValue) if (values[name] === bareMarker) values[name] = true;
  for (const [name, flag] of Object.entries(flags)) {
    if (flag.aliasOf === undefined || values[name] !== true) continue;
    const given = values[flag.aliasOf.flag];
    if (given !== undefined && given !== flag.aliasOf.value) {
      throw new InvalidArgumentError(
        `--${name} means --${flag.aliasOf.flag} ${flag.aliasOf.value}, which contradicts --${flag.aliasOf.flag} ${String(given)}`,
        { flag: name },
      );
    }
    values[flag.aliasOf.flag] = flag.aliasOf.value;
  }
  const min = entry.positionals?.min ?? 0;
  const max = entry.positionals?.max ?? 0;
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    const expected = entry.positionals?.names ?? 'no arguments';
    throw new InvalidArgumentError(
      `berth ${entry.name} expects ${expected}, got ${parsed.positionals.length === 0 ? 'none' : parsed.positionals.map((p) => `"${p}"`).join(' ')}\n${usage}`,
    );
  }
  return { values, positionals: parsed.positionals, rest };
}

/** How a flag's value is spelled after its name: nothing, ` VALUE` or `[=VALUE]`. */
function flagValue(flag: FlagSpec): string {
  if (flag.type === 'boolean') return '';
  return flag.optionalValue ? `[=${flag.valueName ?? 'VALUE'}]` : ` ${flag.valueName ?? 'VALUE'}`;
}

/** `berth NAME [--flag VALUE]... ARGS [-- REST]`, from the table row. */
export function usageLine(entry: CommandEntry): string {
  const flags = Object.entries(entry.flags ?? {}).map(([name, flag]) => {
    const spelled = `--${name}${flag.short ? `|-${flag.short}` : ''}`;
    const value = flagValue(flag);
    return `[${spelled}${value}]${flag.multiple ? '...' : ''}`;
  });
  return [
    `berth ${entry.name}`,
    ...flags,
    ...(entry.positionals ? [entry.positionals.names] : []),
    ...(entry.rest !== undefined ? [`[-- ${entry.rest}]`] : []),
  ].join(' ');
}

/** A command's `--help`: its summary, usage line, and every flag with what it does and its default. */
export function commandHelp(entry: CommandEntry): string {
  const rows = Object.entries({ ...entry.flags, ...commonFlags }).map(([name, flag]) => {
    const value = flagValue(flag);
    const left = `${flag.short ? `-${flag.short}, ` : '    '}--${name}${value}`;
    const right = `${flag.description}${flag.default !== undefined ? ` (default: ${flag.default})` : ''}${flag.multiple ? ' (repeatable)' : ''}`;
    return [left, right] as const;
  });
  const width = Math.min(32, Math.max(...rows.map(([left]) => left.length)));
  const lines = rows.map(([left, right]) =>
    left.length > width ? `  ${left}\n  ${' '.repeat(width)}  ${right}` : `  ${left.padEnd(width)}  ${right}`,
  );
  return `${entry.summary}\n\nUsage: ${usageLine(entry)}\n\nFlags:\n${lines.join('\n')}\n`;
}

export function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  if (value === undefined || typeof value === 'string') return value;
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string').at(-1);
  return undefined;
}

export function stringListOption(values: OptionValues, name: string): string[] {
  const value = values[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string');
}

export function booleanOption(values: OptionValues, name: string): boolean {
  return values[name] === true;
}

export function intOption(values: OptionValues, name: string): number | undefined {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  if (!/^-?\d+$/.test(text))
    throw new InvalidArgumentError(`--${name} must be an integer, got "${text}"`, { flag: name });
  return Number(text);
}

export function dataDir(values: OptionValues): string {
  return stringOption(values, 'dir') ?? process.env.BERTH_DIR ?? '/var/lib/berth';
}

/** `--format`: one of `allowed` (the first is the default), or an error naming the flag. */
export function formatOption(ctx: Pick<CommandContext, 'values'>, allowed: readonly string[]): string {
  const format = stringOption(ctx.values, 'format') ?? allowed[0] ?? 'table';
  if (!allowed.includes(format)) {
    throw new InvalidArgumentError(`Invalid --format "${format}": expected ${allowed.join(' or ')}`, {
      flag: 'format',
    });
  }
  return format;
}

/** Resolves on the first SIGTERM or SIGINT: how long-running commands (server, up) end. */
export function untilStopSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      resolve();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
