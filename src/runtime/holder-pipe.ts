import { closeSync, writeSync } from 'node:fs';
import type { Socket } from 'node:net';

/**
 * The stage-1 holder's pipe to whoever started it (its fd 4), both ends. The holder writes one
 * line `started` (or `failed`, and closes the pipe) once every app runs, then, for a pod that
 * started, `exited` once the apps are gone and exit.json says how, and closes it: the starter may
 * act on the exit while the holder still tears the pod down under the lock. The holder's end (or
 * death) closes the pipe too.
 */
const started = 'started';
const failed = 'failed';
const exited = 'exited';

/** The holder's end: each answer is written once, whatever calls it later. */
export function holderPipeWriter(fd: number): { answer(ok: boolean): void; exited(): void; close(): void } {
  let open = true;
  let answered = false;
  const tell = (line: string, last: boolean) => {
    if (!open) return;
    try {
      writeSync(fd, `${line}\n`);
    } catch {
      // The starter went away (`berth run -d` exits once started): nobody reads the answers.
    }
    if (!last) return;
    open = false;
    closeSync(fd);
  };
  return {
    answer(ok) {
      if (answered) return;
      answered = true;
      tell(ok ? started : failed, !ok);
    },
    exited: () => tell(exited, true),
    /** Closes the pipe if no last answer did (a holder that serves the next pod must). */
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}

/**
 * The starter's end: resolves with the holder's answer (`'started'`, `'failed'`, or what it wrote
 * before it died, `''` for nothing). With `onAppsExited` the pipe stays open, unref'd as the
 * holder's exit watch is, for the `exited` line; without it, it is closed at once, so that
 * `berth run -d` does not wait for the pod's end.
 */
export function readHolderAnswer(pipe: Socket | undefined, onAppsExited?: () => void): Promise<string> {
  return new Promise<string>((resolve) => {
    if (!pipe) {
      resolve('');
      return;
    }
    let text = '';
    let answered = false;
    const answer = (line: string) => {
      if (answered) return;
      answered = true;
      resolve(line);
      if (onAppsExited) pipe.unref();
      else pipe.destroy();
    };
    pipe.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const lines = text.split('\n');
      text = lines.pop() ?? '';
      for (const line of lines) {
        if (line === exited) onAppsExited?.();
        else answer(line.trim());
      }
    });
    pipe.on('close', () => answer(text.trim()));
  });
}

/** Whether an answer says the pod started. */
export function holderStarted(answer: string): boolean {
  return answer === started;
}
