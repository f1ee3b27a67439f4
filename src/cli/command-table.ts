import {
  entityCommandTable,
  historyCommandTable,
  lrpCommandTable,
  systemCommandTable,
  taskCommandTable,
} from './cluster-command-table.js';
import type { CommandEntry } from './command.js';
import { daemonCommandTable } from './daemon-command-table.js';
import { imageCommandTable } from './image-command-table.js';
import { podCommandTable } from './pod-command-table.js';
import { streamCommandTable } from './stream-command-table.js';
import { volumeCommandTable } from './volume-command-table.js';

/**
 * berth's one table of commands, in `berth --help`'s order and sections. Parsing (the flags and
 * positionals of each row), dispatch (its `load`) and help (top-level and per command) all come
 * from it, so help cannot drift from what a command takes; command-table.test.ts walks it.
 */
export const commandSections: readonly {
  readonly title: string;
  readonly commands: readonly CommandEntry[];
}[] = [
  {
    title: 'Pods on this machine (no daemon; state lives in --dir, env BERTH_DIR, default /var/lib/berth)',
    commands: [...podCommandTable, ...volumeCommandTable],
  },
  {
    title: 'Images (the local store; push and pull copy to and from a berth server)',
    commands: imageCommandTable,
  },
  {
    title:
      'The cluster (talks to a server: --server URL[,URL…], env BERTH_SERVER, default http://127.0.0.1:8889; token: --token, env BERTH_TOKEN, or the local admin.token for a server on this machine)',
    commands: [...taskCommandTable, ...lrpCommandTable, ...streamCommandTable],
  },
  { title: 'Cluster history', commands: historyCommandTable },
  { title: 'Systems', commands: [...systemCommandTable, ...entityCommandTable] },
  { title: 'Running berth', commands: daemonCommandTable },
];

export const commandTable: readonly CommandEntry[] = commandSections.flatMap((s) => s.commands);

/** The row named by the first one or two words of argv, and how many words named it. */
export function findCommand(words: readonly string[]): { entry: CommandEntry; used: number } | undefined {
  const two = commandTable.find((c) => c.name === `${words[0]} ${words[1]}`);
  if (two) return { entry: two, used: 2 };
  const one = commandTable.find((c) => c.name === words[0]);
  return one ? { entry: one, used: 1 } : undefined;
}

/** The rows of a group (`image`, `lrp`): for "berth image" alone or an unknown second word. */
export function commandGroup(word: string): readonly CommandEntry[] {
  return commandTable.filter((c) => c.name.startsWith(`${word} `));
}

function firstSentence(text: string): string {
  const end = text.search(/\.(\s|$)/);
  return end === -1 ? text : text.slice(0, end);
}

/** `berth --help`: every command of the table, by section, with the first sentence of its summary. */
export function topLevelHelp(): string {
  const width = Math.max(...commandTable.map((c) => c.name.length));
  const sections = commandSections.map(
    (s) =>
      `${s.title}:\n${s.commands.map((c) => `  ${c.name.padEnd(width)}  ${firstSentence(c.summary)}\n`).join('')}`,
  );
  return `berth — a container orchestrator

Usage: berth COMMAND [FLAGS] [ARGS]
       berth --version

${sections.join('\n')}
Run "berth COMMAND --help" for a command's flags.
`;
}
