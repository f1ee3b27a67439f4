import { setDefaultHttpTransport } from '../core/index.js';
import type { CommandEntry } from './command.js';
import { exitAfterDrain, runEntry } from './command-runner.js';
import { commandGroup, findCommand, topLevelHelp } from './command-table.js';

/**
 * Dispatches argv through the command table (command-table.ts): `--help` and `--version` at the
 * top, a group word alone (`berth lrp`) lists its commands, an unknown command is exit 2.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const [first] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    process.stdout.write(topLevelHelp());
    return first === undefined ? 2 : 0;
  }
  if (first === '--version' || first === '-V') return main(['version', ...argv.slice(1)]);
  const found = findCommand(argv);
  if (found) {
    // A client command sends a request or three and exits: node:http loads in ~1 ms, fetch's
    // undici in ~20. Servers and cells keep fetch.
    if (!found.entry.longRunning) setDefaultHttpTransport('node:http');
    return runEntry(found.entry, argv.slice(found.used));
  }
  const group = commandGroup(first);
  if (group.length === 0) {
    process.stderr.write(`berth: unknown command "${first}"\n\n${topLevelHelp()}`);
    return 2;
  }
  const asked = argv[1] === undefined || argv[1] === '--help' || argv[1] === '-h';
  const text = `${asked ? '' : `berth: unknown command "${argv.slice(0, 2).join(' ')}"\n`}Commands of "berth ${first}":\n${groupLines(group)}`;
  (asked ? process.stdout : process.stderr).write(text);
  return asked && argv[1] !== undefined ? 0 : 2;
}

function groupLines(group: readonly CommandEntry[]): string {
  const width = Math.max(...group.map((c) => c.name.length));
  return group.map((c) => `  berth ${c.name.padEnd(width)}  ${c.summary}\n`).join('');
}

/** The process entry (bin/berth) for every command the pod bundle does not serve. */
export async function runAndExit(argv: readonly string[]): Promise<never> {
  return exitAfterDrain(await main(argv));
}
