import { type ParseArgsConfig, parseArgs } from 'node:util';
import { InvalidArgumentError } from '../core/index.js';

type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

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

export interface CommandSpec {
  /** One or two words: `run`, `image import`. */
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  readonly options?: OptionSpecs;
  /** Options that may appear bare or as `--opt=VALUE` (e.g. `--wait[=TIMEOUT]`). */
  readonly optionalValue?: readonly string[];
  readonly positionals?: { readonly min: number; readonly max: number; readonly names: string };
  readonly acceptsRest?: boolean;
  /**
   * When the reader of our output goes away (`berth … | head`), the command ends as SIGPIPE ends
   * a Unix filter (exit 141), unless this is set: a foreground pod runs on to its end, its output
   * still going to the pod's log, and berth exits with the app's code.
   */
  readonly outlivesReader?: boolean;
  run(ctx: CommandContext): Promise<number>;
}

/** Flags every command takes. */
export const commonOptions: OptionSpecs = {
  dir: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

const bareMarker = '\u0000bare';

/**
 * Parses argv for one command with node's own `util.parseArgs` (no third-party parser on the hot
 * path: `berth run` must start fast). Unknown flags and wrong positional counts are errors that
 * name the flag and show the usage.
 */
export function parseCommandArgs(
  spec: CommandSpec,
  argv: readonly string[],
): Omit<CommandContext, 'stdout' | 'stderr'> {
  const dashDash = argv.indexOf('--');
  const own = dashDash === -1 ? [...argv] : argv.slice(0, dashDash);
  const rest = dashDash === -1 ? [] : argv.slice(dashDash + 1);
  if (rest.length > 0 && !spec.acceptsRest) {
    throw new InvalidArgumentError(`berth ${spec.name} takes no arguments after "--"\nUsage: ${spec.usage}`);
  }
  const options: OptionSpecs = { ...commonOptions, ...spec.options };
  const optionalValue = new Set(spec.optionalValue ?? []);
  const rewritten = own.map((arg) =>
    optionalValue.has(arg.replace(/^--/, '')) && arg.startsWith('--') ? `${arg}=${bareMarker}` : arg,
  );
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: rewritten, options, allowPositionals: true, strict: true });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new InvalidArgumentError(`${message.replace(/\. To specify.*$/s, '')}\nUsage: ${spec.usage}`);
  }
  const values: OptionValues = { ...parsed.values };
  for (const name of optionalValue) if (values[name] === bareMarker) values[name] = true;
  const min = spec.positionals?.min ?? 0;
  const max = spec.positionals?.max ?? 0;
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    const expected = spec.positionals?.names ?? 'no arguments';
    throw new InvalidArgumentError(
      `berth ${spec.name} expects ${expected}, got ${parsed.positionals.length === 0 ? 'none' : parsed.positionals.map((p) => `"${p}"`).join(' ')}\nUsage: ${spec.usage}`,
    );
  }
  return { values, positionals: parsed.positionals, rest };
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
