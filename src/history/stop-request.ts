import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { errnoCode } from '../core/index.js';

/**
 * A stop somebody asked for, left in the pod's directory before the pod is signalled: whoever
 * sees the pod end (the cell's executor, or the CLI's polling for pods run directly) then knows it
 * was stopped on request — not a crash, not a failure — and by whom. The executor's own stops
 * (scale down, cancel, evacuation) write it without a user.
 */
export interface StopRequest {
  /** The user who asked (`berth stop` writes the OS user); null for berth's own stops. */
  readonly user: string | null;
  /** When it was asked (ISO-8601); null when unknown. */
  readonly at: string | null;
}

/** The marker's file name in a pod's directory (also read by adoption after a cell restart). */
export const stopRequestFile = 'stop-requested';

/** Writes the marker whole (by rename), so a reader never sees half of it. */
export function writeStopRequest(podDir: string, request: StopRequest): void {
  const path = join(podDir, stopRequestFile);
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, request.user === null ? '' : JSON.stringify(request));
  renameSync(temp, path);
}

/** The stop asked for this pod, or undefined when nobody asked. */
export function readStopRequest(podDir: string): StopRequest | undefined {
  let text: string;
  try {
    text = readFileSync(join(podDir, stopRequestFile), 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return undefined;
    throw err;
  }
  if (text.trim() === '') return { user: null, at: null };
  try {
    const parsed = JSON.parse(text) as Partial<StopRequest>;
    return {
      user: typeof parsed.user === 'string' && parsed.user !== '' ? parsed.user : null,
      at: typeof parsed.at === 'string' ? parsed.at : null,
    };
  } catch {
    // catch-all: a marker that is not ours to parse still says a stop was asked for.
    return { user: null, at: null };
  }
}

/** The user the CLI acts as on this machine (the OS user), as pods run directly record it. */
export function localUser(): string {
  try {
    return userInfo().username;
  } catch {
    // catch-all: no passwd entry for this uid (containers, CI): the uid says who it was.
    return String(process.getuid?.() ?? 'unknown');
  }
}
