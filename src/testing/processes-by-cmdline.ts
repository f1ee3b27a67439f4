import { readdirSync, readFileSync } from 'node:fs';

/** Pids of the processes whose command line mentions `text` (a pod's uuid: its holder, watcher, runc). */
export function pidsWithCmdline(text: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(text);
      } catch {
        return false; // catch-all: the process ended while listed
      }
    })
    .map(Number);
}
