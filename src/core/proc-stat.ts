import { readFileSync } from 'node:fs';

/**
 * The fields of `/proc/PID/stat` from the third (the state) on: the second, the command name in
 * parentheses, may hold spaces and parentheses itself, so the fields start after its last `)`.
 * Index 0 is the state, 11 and 12 utime and stime, 13 and 14 cutime and cstime (proc(5), minus
 * three). Throws (ENOENT) for a process that is gone.
 */
export function procStatFields(pid: number | 'self'): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}
